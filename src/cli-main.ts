/** The CLI's commands; `cli.ts` is the entry point that loads this module. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { AccountService } from './accounts/account-service.js';
import { readPassword } from './cli/read-password.js';
import { TierUpgrades } from './billing/tier-upgrades.js';
import { AuditLog } from './accounts/audit/audit-log.js';
import { keySnapshot } from './accounts/audit/audit-snapshots.js';
import { tierSnapshot } from './billing/tier-snapshot.js';
import { BILLING_USAGE, isBillingCommand, runBillingCommand } from './cli/billing-commands.js';
import { CATALOG_USAGE, isCatalogCommand, runCatalogCommand } from './cli/catalog-commands.js';
import { offlineCatalogEditor } from './catalog-live.js';
import { CatalogEntryNotFound } from './config/catalog-editor.js';
import { CatalogEntryError } from './config/catalog-entries.js';
import { UsageError } from './cli/usage-error.js';
import { walletTarget } from './cli/wallet-target.js';
import { GatewayError } from './canonical/errors.js';
import { ConfigError, loadConfig } from './config/load-config.js';
import { IDENTITY_USAGE, isIdentityCommand, runIdentityCommand } from './cli/identity-commands.js';
import { isKeyCommand, KEY_USAGE, runKeyCommand } from './cli/key-commands.js';
import { isLimitCommand, LIMIT_USAGE, runLimitCommand } from './cli/limit-commands.js';
import { KeyService } from './keys/key-service.js';
import { ModelCatalog } from './catalog/model-catalog.js';
import { browserUrl, serve } from './main.js';
import { endStartupHeapSizing } from './startup-heap.js';
import { openStorage } from './storage/open-storage.js';
import type { Storage } from './storage/types.js';

const USAGE = `Usage: tollgate <command> [options]   (every command accepts --json)

  serve                                          run the gateway (configuration from the environment / tollgate.yaml)
  migrate                                        apply pending database migrations
  accounts create --email E [--admin]            asks for the password (hidden), or reads its first line from
                                                 stdin when piped; --password P also works but shows it to ps
  accounts tier --email E --tier T               change the rate-limit tier of the person's personal organisation, or
                                                 of any with --organisation ID (takes effect on the next request)
  organisations disable --organisation ID        refuse every request with the organisation's keys (enable: undo)
${IDENTITY_USAGE}${KEY_USAGE}${LIMIT_USAGE}  keys revoke --email E --id ID
${BILLING_USAGE}${CATALOG_USAGE}  simulator [--port P] [--host H]                run the vendor simulator alone
`;

const OPTIONS = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  email: { type: 'string' },
  organisation: { type: 'string' },
  password: { type: 'string' },
  admin: { type: 'boolean' },
  name: { type: 'string' },
  id: { type: 'string' },
  'expires-in-days': { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  tier: { type: 'string' },
  usd: { type: 'string' },
  note: { type: 'string' },
  count: { type: 'string' },
  limit: { type: 'string' },
  scopes: { type: 'string' },
  models: { type: 'string' },
  'spend-limit': { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  period: { type: 'string' },
  rpm: { type: 'string' },
  tpm: { type: 'string' },
  kind: { type: 'string' },
  entry: { type: 'string' },
  replacement: { type: 'string' },
  project: { type: 'string' },
  scope: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  const json = values.json === true;
  const command = positionals.join(' ');
  if (values.help || command === '' || command === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  try {
    const config = loadConfig();
    switch (command) {
      case 'serve':
        await serve(config);
        endStartupHeapSizing();
        return -1; // keeps running
      case 'simulator': {
        // Imported here only: the simulator brings a tokenizer and its tables, which `serve` must not load
        // (the gateway imports it itself in demo mode).
        const { startSimulator } = await import('./simulator/simulator-server.js');
        const simulator = await startSimulator({
          port: integerOption(values, 'port') ?? 8090,
          host: values.host ?? '127.0.0.1',
        });
        endStartupHeapSizing();
        print(
          json,
          { url: simulator.url, base_urls: simulator.baseUrls },
          `Simulator listening on ${simulator.url}\n${Object.entries(simulator.baseUrls)
            .map(([vendor, url]) => `  ${vendor}: ${url}`)
            .join('\n')}`,
        );
        return -1;
      }
      case 'migrate':
        return await withStorage(config.databaseUrl, async (storage) => {
          const applied = await storage.migrate();
          print(json, { applied }, applied.length === 0 ? 'Database is up to date.' : `Applied: ${applied.join(', ')}`);
          return 0;
        });
      case 'accounts create':
        return await withStorage(config.databaseUrl, async (storage) => {
          const account = await new AccountService(storage.accounts).create({
            email: required(values, 'email'),
            // Never on the command line by default (`npm run` echoes it, shells keep it): a prompt, or stdin when piped.
            password: values.password ?? (await readPassword()),
            role: values.admin ? 'admin' : 'user',
          });
          // The operator made it and vouches for the address: nothing to verify.
          await storage.identity.setEmailVerified(account.id, Date.now());
          print(
            json,
            { id: account.id, email: account.email, role: account.role },
            `Created account ${account.email} (${account.id}).`,
          );
          return 0;
        });
      case 'accounts tier':
        return await withStorage(config.databaseUrl, async (storage) => {
          const target = await walletTarget(storage, values);
          // The operator's tier is a floor: a higher tier the user bought or reached by payments stays in force.
          const tierUpgrades = new TierUpgrades(storage.tierUpgrades, config.tiers);
          const before = await tierUpgrades.status(target.organisationId);
          const status = await tierUpgrades.grant(target.organisationId, required(values, 'tier'));
          await new AuditLog(storage.audit, storage.organisations).record({
            organisationId: target.organisationId,
            actor: { type: 'operator' },
            ip: null,
            action: 'tier.grant',
            target: { type: 'tier', id: status.grantedTier },
            before: tierSnapshot(before),
            after: tierSnapshot(status),
          });
          const tier = status.current.name;
          const text =
            tier === status.grantedTier
              ? `${target.label} is now on the '${tier}' tier.`
              : `${target.label} is granted '${status.grantedTier}' and stays on '${tier}' (${status.source === 'bought' ? 'bought' : 'reached by payments'}).`;
          print(json, { id: target.organisationId, email: target.email, tier, granted_tier: status.grantedTier }, text);
          return 0;
        });
      case 'organisations disable':
      case 'organisations enable':
        return await withStorage(config.databaseUrl, async (storage) => {
          const id = required(values, 'organisation');
          const disabled = command === 'organisations disable';
          if (!(await storage.organisations.setDisabled(id, disabled))) {
            throw new GatewayError('not_found', `No organisation with id '${id}'.`, { param: 'organisation' });
          }
          print(json, { id, disabled }, `${id} is ${disabled ? 'disabled' : 'enabled'}.`);
          return 0;
        });
      case 'keys revoke':
        return await withStorage(config.databaseUrl, async (storage) => {
          const account = await new AccountService(storage.accounts).findByEmail(required(values, 'email'));
          const id = required(values, 'id');
          const keys = new KeyService(storage.apiKeys);
          const before = await keys.find(account.id, id);
          await keys.revoke(account.id, id);
          const after = await keys.find(account.id, id);
          await new AuditLog(storage.audit, storage.organisations).record({
            organisationId: account.id,
            actor: { type: 'operator' },
            ip: null,
            action: 'key.revoke',
            target: { type: 'key', id },
            before: before === null ? null : keySnapshot(before),
            after: after === null ? null : keySnapshot(after),
          });
          print(json, { id, revoked: true }, `Revoked ${id}.`);
          return 0;
        });
      default:
        if (isIdentityCommand(command)) {
          return await withStorage(config.databaseUrl, async (storage) => {
            const host = config.host.includes(':') ? `[${config.host}]` : config.host;
            const base = browserUrl(`http://${host}:${config.port}`, config.host, config.publicBaseUrl);
            const output = await runIdentityCommand(command, storage, values, base);
            print(json, output.data, output.text);
            return 0;
          });
        }
        if (isKeyCommand(command)) {
          return await withStorage(config.databaseUrl, async (storage) => {
            const output = await runKeyCommand(command, storage, values);
            print(json, output.data, output.text);
            return 0;
          });
        }
        if (isCatalogCommand(command)) {
          return await withStorage(config.databaseUrl, async (storage) => {
            const editor = offlineCatalogEditor(config, storage.catalog, process.env);
            const output = await runCatalogCommand(command, editor, values);
            print(json, output.data, output.text);
            return 0;
          });
        }
        if (isLimitCommand(command)) {
          return await withStorage(config.databaseUrl, async (storage) => {
            const output = await runLimitCommand(command, storage, values);
            print(json, output.data, output.text);
            return 0;
          });
        }
        if (isBillingCommand(command)) {
          return await withStorage(config.databaseUrl, async (storage) => {
            const catalog = new ModelCatalog(config.models);
            const output = await runBillingCommand(command, storage, {
              ...values,
              journalDirectory: config.settlementJournalDir,
              pricesOf: (modelId) => catalog.find(modelId)?.prices,
            });
            // A credit counts as a payment: it may reach a tier by total paid (from the account's next request).
            if (command === 'credit' && output.exitCode === 0) {
              const target = await walletTarget(storage, values);
              await new TierUpgrades(storage.tierUpgrades, config.tiers).refresh(target.organisationId);
            }
            print(json, output.data, output.text);
            return output.exitCode;
          });
        }
        throw new UsageError(`Unknown command '${command}'.`);
    }
  } catch (error) {
    return fail(json, error);
  }
}

async function withStorage(databaseUrl: string, run: (storage: Storage) => Promise<number>): Promise<number> {
  const storage = await openStorage(databaseUrl);
  try {
    await storage.migrate();
    return await run(storage);
  } finally {
    await storage.close();
  }
}

function required(values: Values, name: 'email' | 'organisation' | 'password' | 'name' | 'id' | 'tier'): string {
  const value = values[name];
  if (value === undefined || value === '') throw new UsageError(`--${name} is required.`);
  return value;
}

function integerOption(values: Values, name: 'port' | 'expires-in-days'): number | undefined {
  const raw = values[name];
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new UsageError(`--${name} must be a whole number.`);
  return Number(raw);
}

function print(json: boolean, data: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(data)}\n` : `${text}\n`);
}

function fail(json: boolean, error: unknown): number {
  const known =
    error instanceof UsageError ||
    error instanceof ConfigError ||
    error instanceof GatewayError ||
    error instanceof CatalogEntryError ||
    error instanceof CatalogEntryNotFound;
  const message = error instanceof Error ? error.message : String(error);
  if (json) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
  else process.stderr.write(`tollgate: ${message}\n${error instanceof UsageError ? `\n${USAGE}` : ''}`);
  if (!known && !json && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  return error instanceof UsageError ? error.exitCode : 1;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    // parseArgs rejects unknown flags by throwing before `json` is known.
    process.stderr.write(`tollgate: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
    process.exitCode = 1;
  },
);
