import type { Database as BetterSqliteDatabase, RunResult } from 'better-sqlite3';

/** A statement written with `:name` parameters, run with an object of them but bound by position. */
export interface PositionalStatement {
  run(values: Readonly<Record<string, unknown>>): RunResult;
  /** The rows of a statement that returns some (a select, or a write with `returning`). */
  all(values: Readonly<Record<string, unknown>>): unknown[];
}

const NAMED_PARAMETER = /:([a-zA-Z]+)/g;

/**
 * Prepares `text` (SQL with `:name` parameters, the form the key-spend statements share with Kysely) with each
 * parameter turned into `?`, and binds the values by position. better-sqlite3 binds a named parameter by looking
 * its name up on the values object from C++, making a string per parameter per call; a JS loop over the names
 * filling an array is several times cheaper, and a name used four times is bound four times either way.
 * A name missing from the values is an error, as with named binding.
 */
export function positionalStatement(database: BetterSqliteDatabase, text: string): PositionalStatement {
  const names: string[] = [];
  const statement = database.prepare(
    text.replace(NAMED_PARAMETER, (_match, name: string) => {
      names.push(name);
      return '?';
    }),
  );
  const ordered = (values: Readonly<Record<string, unknown>>): unknown[] => {
    const list = new Array<unknown>(names.length);
    for (let index = 0; index < names.length; index++) {
      const value = values[names[index]!];
      if (value === undefined) throw new RangeError(`Missing named parameter "${names[index]}"`);
      list[index] = value;
    }
    return list;
  };
  return {
    // Spread: an array argument is read element by element from C++ through V8's generic lookup (~430
    // instructions each under callgrind); separate arguments are bound as they are.
    run: (values) => statement.run(...ordered(values)),
    all: (values) => statement.all(...ordered(values)),
  };
}
