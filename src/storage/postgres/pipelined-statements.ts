/**
 * Several parameterised statements in ONE round trip, atomically: for each statement Parse (only the first
 * time its name is used on a connection), Bind (the values as bound parameters), Describe portal (only until the
 * connection has seen the named statement's columns once) and Execute, then a single Sync for the lot.
 *
 * Atomic without BEGIN/COMMIT: everything between two Syncs runs in one implicit transaction, which the
 * server commits at the Sync; on the first error it skips every message up to the Sync and rolls the whole
 * implicit transaction back (PostgreSQL docs, Frontend/Backend Protocol, Message Flow, "Pipelining":
 * https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-PIPELINING). Two caveats from that
 * section: a statement that cannot run in a transaction block (CREATE DATABASE, VACUUM...) commits at once, so
 * keep those out; and on a client already inside an explicit BEGIN, the statements simply join that transaction.
 * Within the pipeline each statement takes a new snapshot (READ COMMITTED), so it sees the earlier ones' writes.
 *
 * Hand-written because node-postgres has no API for this: a normal client waits for ReadyForQuery between
 * queries, and the `pipeline: true` client mode of recent pg 8 releases sends a Sync after every query, i.e. one implicit
 * transaction per statement, so nothing atomic. Its extension point is the "Submittable" (what pg-cursor and
 * pg-query-stream use): `client.query(submittable)` calls `submit(connection)` when the connection is idle and
 * then routes the backend's replies to the `handle*` methods below. Values go through pg's own `prepareValue`
 * and every column through the client's own type parser, so both come out as `client.query` gives them. Rows are
 * built here rather than by pg's `Result`, whose set-up per result (a null-prototype object written field by
 * field, then copied by spread, for every result and again per row) cost ~28 µs of CPU per PostgreSQL-mode request
 * at c16, more than the rest of the row parsing.
 *
 * A named statement's columns are asked for (Describe) only the first time it runs on a connection: a prepared
 * statement's result columns cannot change under it (PostgreSQL refuses to run it with "cached plan must not change
 * result type" instead), so the columns and their parsers are kept per connection and name, and later runs skip
 * the Describe message, the server's RowDescription and the parsers' lookup (~8 µs per request).
 */
import pg from 'pg';
import type { KeptConnections } from './kept-connections.js';

export interface PipelinedStatement {
  /** Prepared-statement name, parsed once per connection; '' = unnamed, parsed every time. */
  readonly name: string;
  readonly text: string;
  readonly values: readonly unknown[];
  /** Rows as arrays of the columns' values in column order (pg's `rowMode: 'array'`) instead of objects. */
  readonly arrayRows?: boolean;
}

/**
 * ok: every statement ran and the implicit transaction committed; one result per statement, in order.
 * Not ok: the server reported `error`, and nothing of the pipeline was committed. `failedIndex` is the failing
 * statement, or `statements.length` when the commit at Sync failed (e.g. a deferred constraint).
 * Rejects instead when the outcome is unknown or nothing was sent: connection lost, a value pg cannot serialise,
 * a name reused with other text, or a type parser throwing on a returned row (then the transaction DID commit).
 */
export type PipelinedResult =
  | { readonly ok: true; readonly results: pg.QueryResult[] }
  | { readonly ok: false; readonly failedIndex: number; readonly error: pg.DatabaseError };

export function runPipelined(
  client: pg.ClientBase,
  statements: readonly PipelinedStatement[],
): Promise<PipelinedResult> {
  // Nothing to send means no ReadyForQuery would ever come back.
  if (statements.length === 0) return Promise.resolve({ ok: true, results: [] });
  return new Promise((resolve, reject) => {
    client.query(new PipelinedStatements(client, statements, resolve, reject));
  });
}

/**
 * The statements as one pipeline on a connection of their own (kept-connections.ts): their results in order, or a
 * rejection. The server's refusal rejects with its DatabaseError (nothing committed) and the connection stays
 * usable; any other failure discards the connection.
 */
export function runStatements(
  connections: KeptConnections,
  statements: readonly PipelinedStatement[],
): Promise<pg.QueryResult[]> {
  return connections.use(async (client) => {
    const outcome = await runPipelined(client, statements);
    if (!outcome.ok) throw outcome.error;
    return outcome.results;
  });
}

/** One statement as `pool.query({ name, text, values })` runs it (Parse once per connection), through runStatements. */
export async function runStatement(
  connections: KeptConnections,
  statement: PipelinedStatement,
): Promise<pg.QueryResult> {
  const [result] = await runStatements(connections, [statement]);
  return result!;
}

/** The parts of pg's internal Connection (pg/lib/connection.js) this module uses; @types/pg leaves most out. */
interface PgConnection {
  readonly stream: { cork?(): void; uncork?(): void };
  /** pg's own per-connection record of named statements that parsed (name -> text), shared with its Query. */
  readonly parsedStatements: Record<string, string | undefined>;
  parse(message: { name: string; text: string; types: readonly number[] }): void;
  bind(message: {
    portal: string;
    statement: string;
    values: readonly (string | Buffer | null)[];
    binary: boolean;
  }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string; rows: number }): void;
  sync(): void;
  sendCopyFail(message: string): void;
  on(event: 'parseComplete' | 'readyForQuery' | 'end', listener: () => void): unknown;
  off(event: 'parseComplete' | 'readyForQuery' | 'end', listener: () => void): unknown;
}

/** A named statement's result columns as the connection's server described them, with the client's parser for each. */
interface DescribedColumns {
  readonly fields: pg.FieldDef[];
  readonly parsers: readonly ((text: string) => unknown)[];
}

/**
 * Per connection (it dies with the connection: a new one describes again), the columns of each named statement
 * that returned a RowDescription. Statements without one (no result columns) keep their Describe: cheap and rare.
 */
const describedByConnection = new WeakMap<PgConnection, Map<string, DescribedColumns>>();

function describedOn(connection: PgConnection): Map<string, DescribedColumns> {
  let described = describedByConnection.get(connection);
  if (described === undefined) {
    described = new Map();
    describedByConnection.set(connection, described);
  }
  return described;
}

type PrepareValue = (value: unknown) => string | Buffer | null;
/** pg's own parameter serialisation (the `valueMapper` its Query passes to bind); exported as `pg.utils`. */
const prepareValue = (pg as unknown as { utils: { prepareValue: PrepareValue } }).utils.prepareValue;
if (typeof prepareValue !== 'function') throw new Error('pg.utils.prepareValue is missing: pg changed its internals');

class PipelinedStatements {
  private readonly results: pg.QueryResult[] = [];
  private current: StatementResult | null = null;
  /** Statements whose Parse went out, in order; each ParseComplete belongs to the first one left. */
  private readonly awaitingParse: PipelinedStatement[] = [];
  private serverError: pg.DatabaseError | null = null;
  private failedIndex = -1;
  private rowError: unknown = null;
  private settled = false;
  private connection: PgConnection | null = null;
  private readonly types: pg.CustomTypesConfig;
  /** By index: the columns of a statement sent without Describe (known from an earlier run on this connection). */
  private readonly known: (DescribedColumns | undefined)[] = [];
  private described: Map<string, DescribedColumns> | null = null;

  constructor(
    client: pg.ClientBase,
    /** Read by tests that count the statements sent (test/e2e/postgres-write-cost.test.ts). */
    readonly statements: readonly PipelinedStatement[],
    private readonly resolve: (result: PipelinedResult) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    // The client's parsers (its `types` config, then pg's global ones), as its own queries use.
    this.types = {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        client.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
    };
  }

  /** Called by the client once the connection is idle; a returned Error is handed back to handleError. */
  submit(pgConnection: pg.Connection): Error | null {
    const connection = pgConnection as unknown as PgConnection;
    const { parsedStatements } = connection;
    const parseAt: boolean[] = []; // by index: the same statement object may appear twice
    const bound: (string | Buffer | null)[][] = [];
    const textInPipeline = new Map<string, string>();
    try {
      // Everything that can fail locally fails here, before a single byte is written.
      for (const statement of this.statements) {
        const known = textInPipeline.get(statement.name) ?? parsedStatements[statement.name];
        if (statement.name !== '' && known !== undefined && known !== statement.text) {
          // Binding it would silently run the OLD text with the new values.
          throw new Error(
            `Prepared statement "${statement.name}" is already used for different text on this connection`,
          );
        }
        parseAt.push(statement.name === '' || known === undefined);
        textInPipeline.set(statement.name, statement.text);
        bound.push(statement.values.map((value) => prepareValue(value)));
      }
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
    this.connection = connection;
    const described = describedOn(connection);
    this.described = described;
    this.statements.forEach((statement, index) => {
      // Only once parsed here before: a statement parsed in this very pipeline has not been described yet.
      this.known.push(statement.name !== '' && parseAt[index] !== true ? described.get(statement.name) : undefined);
    });
    connection.on('parseComplete', this.onParseComplete);
    connection.on('readyForQuery', this.onReadyForQuery);
    connection.on('end', this.onEnd);
    // Corked, the messages leave in one write (as pg's own Query does it).
    connection.stream.cork?.();
    try {
      this.statements.forEach((statement, index) => {
        if (parseAt[index] === true) {
          connection.parse({ name: statement.name, text: statement.text, types: [] });
          this.awaitingParse.push(statement);
        }
        connection.bind({ portal: '', statement: statement.name, values: bound[index] ?? [], binary: false });
        if (this.known[index] === undefined) connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
      });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(message: { fields: pg.FieldDef[] }): void {
    const statement = this.statements[this.results.length];
    const columns = describeColumns(message.fields, this.types);
    if (statement !== undefined && statement.name !== '') this.described?.set(statement.name, columns);
    this.current = new StatementResult(columns, statement?.arrayRows === true);
  }

  /** The result being read: begun at RowDescription, or at the first row of a statement sent without Describe. */
  private currentResult(): StatementResult {
    if (this.current !== null) return this.current;
    const index = this.results.length;
    this.current = new StatementResult(this.known[index] ?? NO_COLUMNS, this.statements[index]?.arrayRows === true);
    return this.current;
  }

  handleDataRow(message: { fields: (string | null)[] }): void {
    if (this.rowError !== null) return;
    try {
      this.currentResult().addRow(message.fields);
    } catch (error) {
      this.rowError = error; // reported at ReadyForQuery, like pg's Query: the rest of the pipeline still runs
    }
  }

  handleCommandComplete(message: { text: string }): void {
    const result = this.currentResult();
    result.complete(message.text);
    this.results.push(result);
    this.current = null;
  }

  /** An empty statement text: EmptyQueryResponse instead of CommandComplete. */
  handleEmptyQuery(): void {
    this.results.push(this.currentResult());
    this.current = null;
  }

  /**
   * A DatabaseError is the server's ErrorResponse: the pipeline is being rolled back, settled at ReadyForQuery
   * (the client stops routing messages to us after an error, hence our own listener). Anything else is the
   * client giving up on us (lost connection, query_timeout, an Error from submit): the outcome is unknown.
   */
  handleError(error: Error): void {
    if (error instanceof pg.DatabaseError && this.serverError === null && this.connection !== null) {
      this.serverError = error;
      this.failedIndex = this.results.length;
      return;
    }
    this.settle(() => this.reject(error));
  }

  /** Only on success; after an error the client no longer calls us, so both paths settle in onReadyForQuery. */
  handleReadyForQuery(): void {}

  // A COPY ... FROM STDIN cannot be fed from a pipeline; fail it instead of leaving the server waiting.
  handleCopyInResponse(connection: PgConnection): void {
    connection.sendCopyFail('COPY FROM STDIN is not supported in a pipeline');
  }

  handleCopyData(): void {}

  handlePortalSuspended(): void {}

  private readonly onParseComplete = (): void => {
    const statement = this.awaitingParse.shift();
    // Recorded in pg's own map, so a later pipeline (or a named client.query) on this connection binds it without
    // a Parse. Prepared statements outlive the transaction, so this holds even if the pipeline then rolls back.
    if (statement !== undefined && statement.name !== '' && this.connection !== null) {
      this.connection.parsedStatements[statement.name] = statement.text;
    }
  };

  private readonly onReadyForQuery = (): void => {
    this.detach();
    const { serverError, rowError } = this;
    if (serverError !== null)
      this.settle(() => this.resolve({ ok: false, failedIndex: this.failedIndex, error: serverError }));
    else if (rowError !== null) this.settle(() => this.reject(rowError));
    else this.settle(() => this.resolve({ ok: true, results: this.results }));
  };

  /**
   * The socket closed before ReadyForQuery: whether the commit happened is unknown, even after an ErrorResponse.
   * Worded as pg's own "Connection terminated unexpectedly" (which pg hands the query only a tick later), so that
   * a server that went away without a word is an outage (storage-unavailable.ts: 503 and the journal), not a 500.
   */
  private readonly onEnd = (): void => {
    this.detach();
    const cause = this.serverError ?? undefined;
    this.settle(() =>
      this.reject(
        new Error('Connection terminated during a pipeline to PostgreSQL; its outcome is unknown', { cause }),
      ),
    );
  };

  private detach(): void {
    this.connection?.off('parseComplete', this.onParseComplete);
    this.connection?.off('readyForQuery', this.onReadyForQuery);
    this.connection?.off('end', this.onEnd);
  }

  private settle(finish: () => void): void {
    if (this.settled) return;
    this.settled = true;
    finish();
  }
}

const NO_COLUMNS: DescribedColumns = { fields: [], parsers: [] };

/** The columns of a RowDescription, each with the client's parser for its type and format. */
function describeColumns(fields: pg.FieldDef[], types: pg.CustomTypesConfig): DescribedColumns {
  const parsers = fields.map((field) => {
    const parse = types.getTypeParser(field.dataTypeID, field.format === 'binary' ? 'binary' : 'text') as (
      value: string | Buffer,
    ) => unknown;
    return field.format === 'binary' ? (text: string) => parse(Buffer.from(text)) : parse;
  });
  return { fields, parsers };
}

/** CommandComplete's tag: `INSERT 0 5`, `UPDATE 3`, `SELECT 1`, `BEGIN` (the pattern pg's Result reads it with). */
const COMMAND_TAG = /^([A-Za-z]+)(?: (\d+))?(?: (\d+))?/;

/**
 * One statement's result, shaped as `client.query` returns it (command, rowCount, oid, rows keyed by column
 * name in column order with a later column of the same name winning, or arrays as with `rowMode: 'array'`; fields
 * as the server described them), each column's text read by the client's type parser for its type.
 */
class StatementResult implements pg.QueryResult {
  command: string = null as unknown as string;
  rowCount: number | null = null;
  oid: number = null as unknown as number;
  readonly rows: pg.QueryResultRow[] = [];
  readonly fields: pg.FieldDef[];
  private readonly parsers: readonly ((text: string) => unknown)[];

  constructor(
    columns: DescribedColumns,
    private readonly arrayRows: boolean,
  ) {
    // A copy: the described fields are shared by every later result of the statement on this connection.
    this.fields = columns.fields.slice();
    this.parsers = columns.parsers;
  }

  addRow(values: readonly (string | null)[]): void {
    const { fields, parsers } = this;
    if (this.arrayRows) {
      this.rows.push(values.map((value, i) => (value === null || value === undefined ? null : parsers[i]!(value))));
      return;
    }
    const row: pg.QueryResultRow = {};
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      const name = fields[i]!.name;
      const parsed = value === null || value === undefined ? null : parsers[i]!(value);
      // A column named __proto__ is data, as in pg's rows, not the object's prototype.
      if (name === '__proto__')
        Object.defineProperty(row, name, { value: parsed, enumerable: true, writable: true, configurable: true });
      else row[name] = parsed;
    }
    this.rows.push(row);
  }

  complete(tag: string): void {
    const match = COMMAND_TAG.exec(tag);
    if (match === null) return;
    this.command = match[1]!;
    if (match[3] !== undefined) {
      this.oid = Number.parseInt(match[2]!, 10);
      this.rowCount = Number.parseInt(match[3], 10);
    } else if (match[2] !== undefined) {
      this.rowCount = Number.parseInt(match[2], 10);
    }
  }
}
