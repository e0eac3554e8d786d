import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { int8AsNumberTypes } from './int8-as-number.js';

const INT8_OID = 20;

describe('int8AsNumberTypes', () => {
  const parse = int8AsNumberTypes().getTypeParser(INT8_OID, 'text') as (text: string) => unknown;

  it('parses BIGINT text into an exact number', () => {
    expect(parse('4102444800000')).toBe(4_102_444_800_000);
    expect(parse('-42')).toBe(-42);
    expect(parse(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('refuses values a number cannot hold exactly', () => {
    expect(() => parse('9007199254740993')).toThrow(RangeError);
  });

  it('leaves the process-wide parser untouched', () => {
    expect(pg.types.getTypeParser(INT8_OID, 'text')('42')).toBe('42');
  });
});
