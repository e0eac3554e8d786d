import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { dropPostgresSchema, POSTGRES_URL } from './storage-backends.js';
import { startTcpRelay, type TcpRelay } from './tcp-relay.js';

/** A fresh schema on the test PostgreSQL reached through a relay the test can cut, and its database URL. */
export interface RelayedPostgres {
  url: string;
  relay: TcpRelay;
  /** Closes the relay and drops the schema. */
  close(): Promise<void>;
}

export async function startRelayedPostgres(): Promise<RelayedPostgres> {
  const schema = `tollgate_outage_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`).finally(() => admin.end());
  const target = new URL(POSTGRES_URL);
  const relay = await startTcpRelay({ host: target.hostname, port: Number(target.port || 5432) });
  const url = new URL(POSTGRES_URL);
  url.port = String(relay.port);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    url: url.toString(),
    relay,
    close: async () => {
      await relay.close();
      await dropPostgresSchema(schema);
    },
  };
}
