/**
 * Several parameterised statements in ONE round trip, atomically: for each statement Parse (only the first
 * time its name is used on a connection), Bind (the values as bound parameters), Describe portal and Execute,
 * then a single Sync for the lot.
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
 * and rows through pg's own `Result` with the client's type parsers, so both behave exactly as in `client.query`.
 */
import pg from 'pg';

export interface PipelinedStatement {
  /** Prepared-statement name, parsed once per connection; '' = unnamed, parsed every time. */
  readonly name: string;
  readonly text: string;
  readonly values: readonly unknown[];
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

export function runPipelined(client: pg.ClientBase, statements: readonly PipelinedStatement[]): Promise<PipelinedResult> {
  // Nothing to send means no ReadyForQuery would ever come back.
  if (statements.length === 0) return Promise.resolve({ ok: true, results: [] });
  return new Promise((resolve, reject) => {
    client.query(new PipelinedStatements(client, statements, resolve, reject));
  });
}

/** The parts of pg's internal Connection (pg/lib/connection.js) this module uses; @types/pg leaves most out. */
interface PgConnection {
  readonly stream: { cork?(): void; uncork?(): void };
  /** pg's own per-connection record of named statements that parsed (name -> text), shared with its Query. */
  readonly parsedStatements: Record<string, string | undefined>;
  parse(message: { name: string; text: string; types: readonly number[] }): void;
  bind(message: { portal: string; statement: string; values: readonly (string | Buffer | null)[]; binary: boolean }): void;
  describe(message: { type: 'P'; name: string }): void;
  execute(message: { portal: string; rows: number }): void;
  sync(): void;
  sendCopyFail(message: string): void;
  on(event: 'parseComplete' | 'readyForQuery' | 'end', listener: () => void): unknown;
  off(event: 'parseComplete' | 'readyForQuery' | 'end', listener: () => void): unknown;
}

/** pg's Result (exported, but typed by @types/pg without the builder methods its Query calls). */
interface ResultBuilder extends pg.QueryResult {
  addFields(fields: readonly pg.FieldDef[]): void;
  parseRow(fields: readonly unknown[]): pg.QueryResultRow;
  addRow(row: pg.QueryResultRow): void;
  addCommandComplete(message: { text: string }): void;
}

type PrepareValue = (value: unknown) => string | Buffer | null;
/** pg's own parameter serialisation (the `valueMapper` its Query passes to bind); exported as `pg.utils`. */
const prepareValue = (pg as unknown as { utils: { prepareValue: PrepareValue } }).utils.prepareValue;
if (typeof prepareValue !== 'function') throw new Error('pg.utils.prepareValue is missing: pg changed its internals');

class PipelinedStatements {
  private readonly results: pg.QueryResult[] = [];
  private current: ResultBuilder | null = null;
  /** Statements whose Parse went out, in order; each ParseComplete belongs to the first one left. */
  private readonly awaitingParse: PipelinedStatement[] = [];
  private serverError: pg.DatabaseError | null = null;
  private failedIndex = -1;
  private rowError: unknown = null;
  private settled = false;
  private connection: PgConnection | null = null;
  private readonly types: pg.CustomTypesConfig;

  constructor(
    client: pg.ClientBase,
    private readonly statements: readonly PipelinedStatement[],
    private readonly resolve: (result: PipelinedResult) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    // The client's parsers (its `types` config, then pg's global ones), as its own queries use.
    this.types = { getTypeParser: ((oid: number, format?: 'text' | 'binary') => client.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'] };
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
          throw new Error(`Prepared statement "${statement.name}" is already used for different text on this connection`);
        }
        parseAt.push(statement.name === '' || known === undefined);
        textInPipeline.set(statement.name, statement.text);
        bound.push(statement.values.map((value) => prepareValue(value)));
      }
    } catch (error) {
      return error instanceof Error ? error : new Error(String(error));
    }
    this.connection = connection;
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
        connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '', rows: 0 });
      });
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  handleRowDescription(message: { fields: pg.FieldDef[] }): void {
    this.current = this.newResult();
    this.current.addFields(message.fields);
  }

  handleDataRow(message: { fields: unknown[] }): void {
    if (this.current === null || this.rowError !== null) return;
    try {
      this.current.addRow(this.current.parseRow(message.fields));
    } catch (error) {
      this.rowError = error; // reported at ReadyForQuery, like pg's Query: the rest of the pipeline still runs
    }
  }

  handleCommandComplete(message: { text: string }): void {
    const result = this.current ?? this.newResult();
    result.addCommandComplete(message);
    this.results.push(result);
    this.current = null;
  }

  /** An empty statement text: EmptyQueryResponse instead of CommandComplete. */
  handleEmptyQuery(): void {
    this.results.push(this.current ?? this.newResult());
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
    if (serverError !== null) this.settle(() => this.resolve({ ok: false, failedIndex: this.failedIndex, error: serverError }));
    else if (rowError !== null) this.settle(() => this.reject(rowError));
    else this.settle(() => this.resolve({ ok: true, results: this.results }));
  };

  /** The socket closed before ReadyForQuery: whether the commit happened is unknown, even after an ErrorResponse. */
  private readonly onEnd = (): void => {
    this.detach();
    const cause = this.serverError ?? undefined;
    this.settle(() => this.reject(new Error('PostgreSQL connection ended during a pipeline; its outcome is unknown', { cause })));
  };

  /** pg's own Result, so rows and rowCount come out exactly as client.query's do. */
  private newResult(): ResultBuilder {
    return new pg.Result('', this.types as typeof pg.types) as unknown as ResultBuilder;
  }

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
