import { z } from 'zod';
import type { CatalogEntryKind, CatalogEntryRecord } from '../storage/catalog-entry-types.js';
import {
  aliasSchema,
  deploymentName,
  deploymentOnlyFields,
  deploymentSchema,
  httpUrl,
  modelOverrideSchema,
  publicName,
  vendorFields,
} from './config-schema.js';
import { aliasOf, deploymentOf, type AliasConfig, type Config } from './load-config.js';

/**
 * The operator's stored catalog entries (models, aliases, deployments) checked by the rules tollgate.yaml's are,
 * and laid over the file's: a stored entry replaces the file's entry of the same name whole. A stored deployment
 * names environment variables for its keys (`apiKeyEnv`), read on each instance, so no key is ever stored.
 */

/** An environment variable's name, as a deployment's key is given. */
const environmentName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an environment variable name');

const storedCredential = z
  .object({ apiKeyEnv: environmentName, baseUrl: httpUrl.optional(), label: z.string().min(1).max(64).optional() })
  .strict();

const { apiKey: _apiKey, credentials: _credentials, baseUrl: _baseUrl, ...upstreamFields } = vendorFields;

/** A stored deployment: tollgate.yaml's fields, with environment variable names where the file has keys. */
const storedDeploymentSchema = z
  .object({
    ...upstreamFields,
    ...deploymentOnlyFields,
    apiKeyEnv: environmentName.optional(),
    credentials: z.array(storedCredential).min(1).optional(),
  })
  .strict();

const storedAliasSchema = aliasSchema;

/** A stored entry that breaks a rule: `field` is its dotted name (`models.x.prices.input`). */
export class CatalogEntryError extends Error {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'CatalogEntryError';
  }

  /** An Error of the catalog's own checks (`models.x.replacement: …`) with its field pulled out. */
  static from(error: unknown): CatalogEntryError {
    if (error instanceof CatalogEntryError) return error;
    const message = (error as Error).message.replace(/^Invalid configuration:\s*/, '');
    const match = /^([^\s:]+):\s*([\s\S]*)$/.exec(message);
    return match === null ? new CatalogEntryError('catalog', message) : new CatalogEntryError(match[1]!, match[2]!);
  }
}

const SECTION: Readonly<Record<CatalogEntryKind, string>> = {
  model: 'models',
  alias: 'aliases',
  deployment: 'deployments',
};

/** `models.alpha-x`, `aliases.latest`: an entry's name in messages and in tollgate.yaml. */
export function entryName(kind: CatalogEntryKind, id: string): string {
  return `${SECTION[kind]}.${id}`;
}

function parsed<T>(schema: z.ZodType<T>, value: unknown, owner: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = issue.path.map(String);
  return failWith(path.length === 0 ? owner : `${owner}.${path.join('.')}`, issue.message);
}

function failWith(field: string, problem: string): never {
  throw new CatalogEntryError(field, problem);
}

/** Checks one entry's id and document on their own (not yet against the rest of the catalog). */
export function checkEntry(kind: CatalogEntryKind, id: string, document: unknown): void {
  const owner = entryName(kind, id);
  parsed(kind === 'deployment' ? deploymentName : publicName, id, owner);
  const schema = kind === 'model' ? modelOverrideSchema : kind === 'alias' ? storedAliasSchema : storedDeploymentSchema;
  parsed(schema as z.ZodType<unknown>, document, owner);
}

type Environment = Readonly<Record<string, string | undefined>>;

/** A stored deployment with its keys read from the environment, checked as tollgate.yaml's deployments are. */
function deploymentFrom(id: string, document: unknown, env: Environment) {
  const owner = entryName('deployment', id);
  const stored = parsed(storedDeploymentSchema, document, owner);
  const keyOf = (name: string, field: string) => {
    const value = env[name];
    if (value === undefined || value === '')
      failWith(`${owner}.${field}`, `the environment variable ${name} is not set on this instance`);
    return value;
  };
  if (stored.apiKeyEnv === undefined && stored.credentials === undefined)
    failWith(`${owner}.apiKeyEnv`, 'needs credentials: apiKeyEnv or credentials (environment variable names)');
  const { apiKeyEnv, credentials, ...rest } = document as Record<string, unknown> & typeof stored;
  const withKeys = {
    ...rest,
    ...(apiKeyEnv === undefined ? {} : { apiKey: keyOf(apiKeyEnv, 'apiKeyEnv') }),
    ...(credentials === undefined
      ? {}
      : {
          credentials: credentials.map(({ apiKeyEnv: name, ...credential }, index) => ({
            ...credential,
            apiKey: keyOf(name, `credentials.${index}.apiKeyEnv`),
          })),
        }),
  };
  return deploymentOf(id, parsed(deploymentSchema, withKeys, owner));
}

/**
 * The configuration with the stored entries laid over the file's (each replacing the file's entry of its name);
 * throws CatalogEntryError naming the first entry and field that breaks a rule of tollgate.yaml.
 */
export function withCatalogEntries(
  config: Config,
  entries: readonly Pick<CatalogEntryRecord, 'kind' | 'id' | 'document'>[],
  env: Environment,
): Config {
  const models: Record<string, Config['models'][string]> = { ...config.models };
  const aliases: Record<string, AliasConfig> = { ...config.aliases };
  const deployments: Record<string, Config['deployments'][string]> = { ...config.deployments };
  for (const entry of entries) {
    const owner = entryName(entry.kind, entry.id);
    if (entry.kind === 'model') {
      parsed(publicName, entry.id, owner);
      models[entry.id] = parsed(modelOverrideSchema, entry.document, owner);
    } else if (entry.kind === 'alias') {
      parsed(publicName, entry.id, owner);
      aliases[entry.id] = aliasOf(parsed(storedAliasSchema, entry.document, owner));
    } else {
      parsed(deploymentName, entry.id, owner);
      deployments[entry.id] = deploymentFrom(entry.id, entry.document, env);
    }
  }
  return Object.freeze({
    ...config,
    models: Object.freeze(models),
    aliases: Object.freeze(aliases),
    deployments: Object.freeze(deployments),
  });
}
