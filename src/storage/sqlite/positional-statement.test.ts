import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { positionalStatement } from './positional-statement.js';

describe('a :name statement bound by position', () => {
  it('binds every use of a name, in the order of the text', () => {
    const database = new Database(':memory:');
    database.exec('create table t (a integer, b integer, c text)');
    database.exec("insert into t values (1, 2, 'x')");
    const statement = positionalStatement(
      database,
      'update t set a = a + :step, b = case when :step > 5 then :big else b end where c = :name',
    );
    expect(statement.run({ step: 10, big: 99n, name: 'x' }).changes).toBe(1);
    expect(database.prepare('select a, b from t').get()).toEqual({ a: 11, b: 99 });
    expect(statement.run({ step: 1, big: 0, name: 'y' }).changes).toBe(0);
  });

  it('refuses values without one of the names', () => {
    const database = new Database(':memory:');
    database.exec('create table t (a integer)');
    expect(() => positionalStatement(database, 'insert into t values (:a)').run({ b: 1 })).toThrow(/"a"/);
  });
});
