import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import { ModelCatalog } from './catalog/model-catalog.js';
import type { Config } from './config/load-config.js';
import type { ChatPipeline } from './pipeline/chat-pipeline.js';
import { FallbackModels } from './pipeline/fallback-models.js';
import type { DeploymentBuilder } from './providers/deployment-providers.js';
import type { ProviderRegistry } from './providers/registry.js';

/** What a configuration's catalog part is applied to: the objects every request reads. */
export interface CatalogTargets {
  catalog: ModelCatalog;
  providers: ProviderRegistry;
  deployments: DeploymentBuilder;
}

/** A configuration's catalog, deployments and chains, checked in full; nothing changes until `commit`. */
export interface PreparedCatalog {
  fallbacks: FallbackModels;
  commit(pipeline?: ChatPipeline): void;
}

/**
 * Checks the catalog part of `config` (models, aliases, deployments, fallback chains) against each other and
 * returns it ready to apply; throws an Error naming the entry at the first problem, with nothing changed.
 */
export function prepareCatalog(config: Config, targets: CatalogTargets): PreparedCatalog {
  const aliases = Object.fromEntries(Object.entries(config.aliases).map(([name, alias]) => [name, alias.model]));
  const draft = new ModelCatalog(config.models, aliases);
  const lists = Object.entries(config.models).flatMap(([id, entry]) => {
    const model = draft.find(id);
    return entry.deployments === undefined || model === undefined
      ? []
      : [{ owner: `models.${id}`, family: model.family, deployments: entry.deployments }];
  });
  const built = targets.deployments.build(config.deployments, lists);
  const chains: Record<string, readonly string[] | undefined> = {};
  for (const [id, entry] of Object.entries(config.models)) {
    if (entry.fallbacks !== undefined && entry.fallback !== undefined)
      throw new Error(`models.${id}: give fallbacks or fallback, not both`);
    chains[id] = entry.fallbacks ?? (entry.fallback === undefined ? undefined : [entry.fallback]);
  }
  for (const [name, alias] of Object.entries(config.aliases)) chains[name] = alias.fallbacks;
  const fallbacks = new FallbackModels(draft, targets.providers.withDeployments(built.providers), chains);
  return {
    fallbacks,
    commit(pipeline) {
      built.commit();
      targets.providers.replaceDeployments(built.providers, () => targets.deployments.close());
      targets.catalog.adopt(draft);
      pipeline?.replaceFallbacks(fallbacks);
    },
  };
}

/**
 * Watches the configuration file and hands the reloaded configuration to `apply` when it changes: each instance
 * watches its own file (a shared volume or a config map gives them the same one). A bad edit is logged, naming the
 * entry, and the running catalog is kept. The directory is watched, not the file: editors and config maps replace
 * the file.
 */
export function watchCatalog(
  file: string,
  reload: () => Config,
  apply: (config: Config) => { models: number },
  logger: Logger,
): { close(): void } {
  let timer: NodeJS.Timeout | undefined;
  const reapply = () => {
    timer = undefined;
    try {
      const config = reload();
      const { models } = apply(config);
      logger.info(
        { models, aliases: Object.keys(config.aliases).length, deployments: Object.keys(config.deployments).length },
        `catalog reloaded from ${file}`,
      );
    } catch (error) {
      logger.error(
        { err: error },
        `catalog reload from ${file} refused, the running catalog is kept: ${(error as Error).message}`,
      );
    }
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(file), { persistent: false }, (_event, name) => {
      if (name !== null && name !== basename(file)) return;
      // An editor's save is several events (truncate, write, rename): applied once they settle.
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(reapply, 150);
    });
  } catch (error) {
    logger.warn({ err: error }, `cannot watch ${file}: catalog changes need a restart`);
  }
  return {
    close() {
      watcher?.close();
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}
