import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * SQLite only: `reservations` becomes one b-tree. Every request inserts its hold in the admission's commit and
 * deletes it in the settlement's, and a WAL commit writes each page it touched as a frame (two `pwrite`s: the
 * frame header, then the page). A rowid table with a text primary key is three b-trees here (the table, the
 * primary key's automatic index, `reservations_expires_at_idx`), so each of the two commits wrote three frames
 * for its one row: 6 of a JSON request's 13 frames (issue 22, measured with strace: 28 `pwrite`s per request at
 * concurrency 1, ~5-10 µs each on this machine's ext4, on the request's path).
 *
 * - WITHOUT ROWID: the table is stored in its primary key's order (request ids start with the time, so holds
 *   go to its right-hand leaf), no separate index for `request_id`;
 * - no index on `expires_at`: the table holds only the holds of requests in flight (and orphans until the
 *   sweeper's next pass), so the sweeper's `expires_at < now` reads a few pages, as the per-account count of
 *   holds (`count(*) where account_id = ?`) already does without an index.
 *
 * PostgreSQL is left as it is (its index and heap are written per row, not per commit; not measured there).
 * Rebuilt as SQLite's documented procedure says (new table, copy, drop, rename), from the table's own definition
 * in sqlite_master, so columns added by earlier migrations are kept as they are.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  // The old table's indexes go with it; the rebuilt one gets none.
  await rebuildReservations(db, (definition) => `${definition} without rowid`);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await rebuildReservations(db, (definition) => definition.replace(/\s+without\s+rowid\s*$/i, ''));
  await db.schema.createIndex('reservations_expires_at_idx').on('reservations').column('expires_at').execute();
}

async function rebuildReservations(db: Kysely<unknown>, define: (definition: string) => string): Promise<void> {
  const table = await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = 'reservations'`.execute(db);
  const definition = table.rows[0]?.sql;
  if (definition === undefined) throw new Error('reservations is missing');
  const rebuilt = define(definition).replace(/^create table\s+"?reservations"?/i, 'create table "reservations_rebuilt"');
  await sql.raw(rebuilt).execute(db);
  await sql`insert into reservations_rebuilt select * from reservations`.execute(db);
  await sql`drop table reservations`.execute(db);
  await sql`alter table reservations_rebuilt rename to reservations`.execute(db);
}
