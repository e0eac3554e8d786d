import pg from 'pg';

/** OID of PostgreSQL's int8 (BIGINT), which pg returns as a string by default. */
const INT8_OID = 20;

/**
 * Type parsers for one pool: int8 → JS number. Our BIGINT columns today are epoch milliseconds and
 * token sums, far below 2^53; a value beyond that fails loudly instead of silently losing precision.
 * Per pool, never via the global `pg.types`, because other code in the process (and money columns,
 * which are bigint nano-USD) must not inherit this. When money columns arrive, they will need either
 * their own pool parser (int8 → bigint, with the repositories converting times to number) or a cast.
 */
export function int8AsNumberTypes(): pg.CustomTypesConfig {
  const types = new pg.TypeOverrides();
  types.setTypeParser(INT8_OID, 'text', parseSafeInteger);
  return types;
}

function parseSafeInteger(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) {
    throw new RangeError(`BIGINT value ${text} does not fit a JS number exactly; read it as bigint instead.`);
  }
  return value;
}
