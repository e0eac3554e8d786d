import type { Logger } from 'pino';
import { redisCatalogNotices, type CatalogNotices } from './catalog-notices.js';
import { prepareCatalog, type CatalogTargets, type PreparedCatalog } from './catalog-runtime.js';
import { ModelCatalog } from './catalog/model-catalog.js';
import { MODEL_DEFINITIONS } from './catalog/models.js';
import { createProviders } from './providers/create-providers.js';
import { DeploymentBuilder } from './providers/deployment-providers.js';
import { CatalogEditor } from './config/catalog-editor.js';
import { withCatalogEntries } from './config/catalog-entries.js';
import type { Config } from './config/load-config.js';
import type { ChatPipeline } from './pipeline/chat-pipeline.js';
import type { CatalogEntryRecord, CatalogEntryRepository, CatalogSnapshot } from './storage/catalog-entry-types.js';

type Environment = Readonly<Record<string, string | undefined>>;

/**
 * The running catalog of one instance: tollgate.yaml's entries with the operator's stored ones laid over them.
 * The stored revision is read every `catalogPollMs`; a new one is read whole, checked and swapped in at once
 * (a request keeps the catalog it started with). A stored catalog this instance cannot apply (a deployment's key
 * variable unset here) is logged and the running catalog kept.
 */
export class LiveCatalog {
  private fileConfig: Config;
  private entries: readonly CatalogEntryRecord[] = [];
  private revision = 0;
  private pipeline: ChatPipeline | undefined;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private pollAgain = false;
  private notices: CatalogNotices | undefined;
  readonly editor: CatalogEditor;

  constructor(
    config: Config,
    private readonly targets: CatalogTargets,
    private readonly repository: CatalogEntryRepository,
    private readonly env: Environment,
    private readonly logger: Logger,
    now: () => number,
  ) {
    this.fileConfig = config;
    this.editor = new CatalogEditor({
      repository,
      fileConfig: () => this.fileConfig,
      env,
      listedModels: new Set(MODEL_DEFINITIONS.map((model) => model.id)),
      check: (candidate) => {
        const prepared = prepareCatalog(candidate, targets);
        return { commit: () => prepared.commit(this.pipeline) };
      },
      applied: (snapshot, checked) => {
        if (snapshot.revision <= this.revision) return;
        checked.commit();
        this.adopted(snapshot);
        this.notices?.publish(snapshot.revision);
      },
      now,
    });
  }

  /**
   * The catalog to start with: the file's with the stored entries, or the file's alone (logged) when the stored
   * ones cannot apply here. Throws when the file's own catalog is bad.
   */
  async prepareAtStart(): Promise<PreparedCatalog> {
    const snapshot = await this.repository.snapshot();
    try {
      const prepared = prepareCatalog(withCatalogEntries(this.fileConfig, snapshot.entries, this.env), this.targets);
      this.adopted(snapshot);
      return prepared;
    } catch (error) {
      this.revision = snapshot.revision;
      this.logger.error(
        { err: error, revision: snapshot.revision },
        `the stored catalog edits cannot apply on this instance, serving tollgate.yaml's catalog alone: ${(error as Error).message}`,
      );
      return prepareCatalog(this.fileConfig, this.targets);
    }
  }

  /**
   * Starts polling, and with Redis listens for the other instances' notices of a change (read at once); the
   * pipeline is the one whose fallback chains a new catalog replaces.
   */
  start(pipeline: ChatPipeline, pollMs: number, redisUrl?: string): void {
    this.pipeline = pipeline;
    this.timer = setInterval(() => void this.poll(), pollMs);
    this.timer.unref();
    if (redisUrl !== undefined) this.notices = redisCatalogNotices(redisUrl, () => void this.poll(), this.logger);
  }

  /** Reads the revision and, when another instance stored a change, applies the stored catalog. */
  poll(): Promise<void> {
    if (this.polling !== undefined) {
      // A notice during a read that may have missed its revision: read once more after it.
      this.pollAgain = true;
      return this.polling;
    }
    this.polling = this.pollOnce().finally(() => {
      this.polling = undefined;
      if (this.pollAgain) {
        this.pollAgain = false;
        void this.poll();
      }
    });
    return this.polling;
  }

  /** tollgate.yaml changed: its catalog with the stored entries over it; throws (nothing changed) when bad. */
  fileChanged(config: Config): { models: number } {
    prepareCatalog(withCatalogEntries(config, this.entries, this.env), this.targets).commit(this.pipeline);
    this.fileConfig = config;
    return { models: this.targets.catalog.models.length };
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.notices?.close();
  }

  private async pollOnce(): Promise<void> {
    try {
      if ((await this.repository.revision()) <= this.revision) return;
      const snapshot = await this.repository.snapshot();
      if (snapshot.revision <= this.revision) return;
      try {
        prepareCatalog(withCatalogEntries(this.fileConfig, snapshot.entries, this.env), this.targets).commit(
          this.pipeline,
        );
        this.adopted(snapshot);
        this.logger.info({ revision: snapshot.revision }, 'catalog revision applied');
      } catch (error) {
        // Logged once per revision: the next poll finds nothing newer and stays quiet.
        this.revision = snapshot.revision;
        this.logger.error(
          { err: error, revision: snapshot.revision },
          `catalog revision ${snapshot.revision} cannot apply on this instance, the running catalog is kept: ${(error as Error).message}`,
        );
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'catalog revision poll failed; retried on the next one');
    }
  }

  private adopted(snapshot: CatalogSnapshot): void {
    this.entries = snapshot.entries;
    this.revision = snapshot.revision;
  }
}

/** Vendor URLs that are never called: in demo mode a check needs every family served, as `serve` has them. */
const UNCALLED_SIMULATOR = {
  anthropic: 'http://127.0.0.1:9',
  openai: 'http://127.0.0.1:9',
  gemini: 'http://127.0.0.1:9',
  deepseek: 'http://127.0.0.1:9',
} as const;

/**
 * An editor for the CLI: it checks each change by building the catalog it makes on its own (the running instances
 * apply it when they next read the revision).
 */
export function offlineCatalogEditor(
  config: Config,
  repository: CatalogEntryRepository,
  env: Environment,
): CatalogEditor {
  return new CatalogEditor({
    repository,
    fileConfig: () => config,
    env,
    listedModels: new Set(MODEL_DEFINITIONS.map((model) => model.id)),
    check: (candidate) => {
      const targets: CatalogTargets = {
        catalog: new ModelCatalog(),
        providers: createProviders(candidate, UNCALLED_SIMULATOR),
        deployments: new DeploymentBuilder(candidate.streamKeepAliveMs),
      };
      prepareCatalog(candidate, targets);
      return { commit: () => undefined };
    },
    now: Date.now,
  });
}
