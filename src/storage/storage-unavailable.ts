/**
 * Whether an error says the database cannot be reached or cannot write right now (an outage: a stopped or
 * restarting server, a cut network, a disk that refuses writes), as opposed to a fault of the query or of the
 * gateway. An outage is answered 503 with `retry-after` and a settlement it refuses goes to the journal; any
 * other error stays an internal error. Duck-typed over both drivers (pg, better-sqlite3), so neither is loaded
 * to tell, and following `cause` chains (a catalog error wrapping the driver's).
 */
export function isStorageUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; typeof current === 'object' && current !== null && depth < 8; depth++) {
    if (isOutageError(current as DriverError)) return true;
    const { errors } = current as { errors?: unknown };
    // net's Happy Eyeballs refuses with an AggregateError of one error per address tried.
    if (
      Array.isArray(errors) &&
      errors.length > 0 &&
      errors.every((inner) => typeof inner === 'object' && inner !== null && isOutageError(inner as DriverError))
    )
      return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

interface DriverError {
  code?: unknown;
  message?: unknown;
}

/** Socket-level failures reaching a database server. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs of an unavailable server: class 08 (connection exception), 53 (insufficient resources:
 * disk full, out of memory, too many connections), 57P01–57P03 (terminated by an administrator or a crash, or
 * the server is starting or shutting down), 58030 (I/O error).
 */
const POSTGRES_OUTAGE_STATES = /^(08|53)[0-9A-Z]{3}$|^57P0[1-3]$|^58030$/;

/**
 * SQLite result codes of a database that cannot write now: I/O errors (a disk or file that refuses writes),
 * a read-only or full file, a file that cannot be opened, a lock another process holds beyond busy_timeout.
 */
const SQLITE_OUTAGE_CODES = /^SQLITE_(IOERR|READONLY|FULL|CANTOPEN|BUSY|LOCKED|PROTOCOL|NOLFS)(_|$)/;

/** pg's own errors for a lost or refused connection carry no code, only these messages. */
const POSTGRES_CONNECTION_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Connection terminated due to connection timeout)/;

function isOutageError(error: DriverError): boolean {
  const { code, message } = error;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || SQLITE_OUTAGE_CODES.test(code) || POSTGRES_OUTAGE_STATES.test(code)) return true;
  }
  return typeof message === 'string' && POSTGRES_CONNECTION_MESSAGES.test(message);
}
