import { fileURLToPath } from 'node:url';

/** Where a DATABASE_URL points, decided from its form alone (no I/O). */
export type DatabaseTarget =
  | { kind: 'postgres'; connectionString: string }
  /** `filename` is a path for better-sqlite3, or `:memory:`. */
  | { kind: 'sqlite'; filename: string };

const MEMORY = ':memory:';

/**
 * `postgres://…` / `postgresql://…` → PostgreSQL.
 * `sqlite:PATH`, `sqlite://PATH`, `file:PATH`, `file:///ABSOLUTE`, `:memory:` or a bare path → SQLite.
 * Any other `scheme://` is refused rather than mistaken for a file name.
 */
export function parseDatabaseUrl(url: string): DatabaseTarget {
  const trimmed = url.trim();
  if (trimmed === '') throw new Error('The database URL is empty.');
  if (/^postgres(ql)?:\/\//i.test(trimmed)) return { kind: 'postgres', connectionString: trimmed };
  if (trimmed === MEMORY) return { kind: 'sqlite', filename: MEMORY };
  if (/^sqlite:/i.test(trimmed)) return sqliteTarget(trimmed.slice('sqlite:'.length).replace(/^\/\//, ''));
  // file:// URLs are real URLs (percent-encoding, host part); `file:relative/path` is not.
  if (/^file:\/\//i.test(trimmed)) return sqliteTarget(fileURLToPath(trimmed));
  if (/^file:/i.test(trimmed)) return sqliteTarget(trimmed.slice('file:'.length));
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(trimmed)?.[1];
  if (scheme !== undefined)
    throw new Error(`Unsupported database URL scheme "${scheme}:"; use postgres:// or sqlite:.`);
  return sqliteTarget(trimmed);
}

function sqliteTarget(filename: string): DatabaseTarget {
  if (filename === '') throw new Error('The SQLite database URL names no file.');
  return { kind: 'sqlite', filename };
}

/** The URL with any password masked, for logs and the start-up banner. Never throws. */
export function describeDatabaseUrl(url: string): string {
  let target: DatabaseTarget;
  try {
    target = parseDatabaseUrl(url);
  } catch {
    return '(invalid database URL)';
  }
  if (target.kind === 'sqlite') return `sqlite:${target.filename}`;
  let parsed: URL;
  try {
    parsed = new URL(target.connectionString);
  } catch {
    // Do not echo what we cannot parse: the password could be anywhere in it.
    return `${target.connectionString.split(':')[0]}://(unparseable URL)`;
  }
  if (parsed.password !== '') parsed.password = '***';
  for (const name of [...parsed.searchParams.keys()]) {
    if (/password|secret|key/i.test(name)) parsed.searchParams.set(name, '***');
  }
  // URLSearchParams re-encodes `***` as `%2A%2A%2A`; put the mask back for readability.
  return parsed.toString().replaceAll('%2A%2A%2A', '***');
}
