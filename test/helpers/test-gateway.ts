import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { VendorName } from '../../src/canonical/request.js';
import { loadConfig } from '../../src/config/load-config.js';
import { startGateway, type RunningGateway } from '../../src/gateway.js';
import { startSimulator } from '../../src/simulator/simulator-server.js';
import { dropPostgresSchema, POSTGRES_URL } from './storage-backends.js';
import { LOG_OPTIONS } from '../../src/observability/log-options.js';

export interface TestGateway {
  gateway: RunningGateway;
  simulator: Awaited<ReturnType<typeof startSimulator>> | undefined;
  /** Base URL for the OpenAI SDK (`…/v1`). */
  openaiBaseUrl: string;
  databaseUrl: string;
  /** Every log line the gateway wrote, as text. */
  logs: string[];
  /** A fresh account with one API key, on the given rate-limit tier (default: standard, 100 requests/min). */
  createAccountWithKey(email?: string, tier?: string): Promise<{ accountId: string; key: string; keyId: string }>;
  close(): Promise<void>;
}

export interface TestGatewayOptions {
  /** Extra environment (e.g. to point vendors elsewhere); the defaults point every configured vendor at a simulator. */
  env?: Record<string, string>;
  /** Serve from the in-process demo simulator instead of a separate one. */
  demo?: boolean;
  now?: () => number;
  /** Vendors pointed at the simulator (default: all four); the others stay unconfigured. */
  vendors?: VendorName[];
  /** Store in the local PostgreSQL (a fresh schema, dropped on close) instead of SQLite. */
  postgres?: boolean;
  /** A tollgate.yaml for this gateway (tiers, model overrides). */
  yaml?: string;
}

const ALL_VENDORS: VendorName[] = ['openai', 'anthropic', 'gemini', 'deepseek'];

let accountCounter = 0;

/** The real gateway on a loopback port, SQLite in a temp dir, a separate simulator as every vendor's upstream. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const directory = mkdtempSync(join(tmpdir(), 'tollgate-test-'));
  const postgresSchema = options.postgres ? `tollgate_e2e_${randomBytes(6).toString('hex')}` : undefined;
  const databaseUrl = postgresSchema === undefined ? `sqlite:${join(directory, 'tollgate.db')}` : POSTGRES_URL;
  const simulator = options.demo ? undefined : await startSimulator({ port: 0, host: '127.0.0.1' });
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    // Its own, never the working directory's ./data (a PostgreSQL gateway's default).
    SETTLEMENT_JOURNAL_DIR: join(directory, 'settlement-journal'),
    LOG_LEVEL: 'trace',
    // Suites register many accounts from 127.0.0.1; the registration limit has its own test (dashboard-security).
    REGISTRATIONS_PER_IP: '0',
    ...Object.fromEntries(
      simulator === undefined
        ? []
        : (options.vendors ?? ALL_VENDORS).map((vendor) => [`${vendor.toUpperCase()}_BASE_URL`, simulator.baseUrls[vendor]]),
    ),
    ...options.env,
  };
  const logs: string[] = [];
  const logSink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(chunk.toString('utf8'));
      callback();
    },
  });
  if (options.yaml !== undefined) writeFileSync(join(directory, 'tollgate.yaml'), options.yaml);
  const config = loadConfig(env, directory);
  // The gateway's own logger options (redaction, the error serializer): the log tests read what production writes.
  const logger = pino({ level: 'trace', ...LOG_OPTIONS }, logSink);
  const gateway = await startGateway(config, {
    logger,
    ...(options.now === undefined ? {} : { now: options.now }),
    ...(postgresSchema === undefined ? {} : { postgresSchema }),
  });
  return {
    gateway,
    simulator,
    openaiBaseUrl: `${gateway.url}/v1`,
    databaseUrl,
    logs,
    async createAccountWithKey(email = `user${++accountCounter}-${Date.now()}@example.com`, tier?: string) {
      const account = await gateway.accounts.create({ email, password: 'correct horse battery staple' });
      if (tier !== undefined) await gateway.accounts.setTier(email, tier, config.tiers);
      const created = await gateway.keys.create(account.id, { name: 'test' });
      return { accountId: account.id, key: created.secret, keyId: created.record.id };
    },
    async close() {
      await gateway.close();
      await simulator?.close();
      rmSync(directory, { recursive: true, force: true });
      if (postgresSchema !== undefined) await dropPostgresSchema(postgresSchema);
    },
  };
}
