import { describe, expect, it } from 'vitest';
import { GatewayError } from '../canonical/errors.js';
import { isStorageUnavailable } from './storage-unavailable.js';

const coded = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isStorageUnavailable', () => {
  it('recognises what the drivers say when the database cannot be reached or cannot write', () => {
    for (const error of [
      coded('ECONNREFUSED'),
      coded('ECONNRESET'),
      coded('57P01', 'terminating connection due to administrator command'),
      coded('57P03', 'the database system is starting up'),
      coded('08006'),
      coded('53100', 'could not extend file: No space left on device'),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      coded('SQLITE_IOERR_WRITE', 'disk I/O error'),
      coded('SQLITE_READONLY'),
      coded('SQLITE_BUSY', 'database is locked'),
      coded('SQLITE_FULL'),
      Object.assign(new AggregateError([coded('ECONNREFUSED'), coded('ECONNREFUSED')]), { code: undefined }),
      new GatewayError('internal_error', 'wrapped', { cause: coded('ECONNREFUSED') }),
    ]) {
      expect(isStorageUnavailable(error), String((error as { code?: string }).code ?? (error as Error).message)).toBe(
        true,
      );
    }
  });

  it('leaves faults of the query or of the gateway alone', () => {
    for (const error of [
      coded('23505', 'duplicate key value violates unique constraint'),
      coded('22021', 'invalid byte sequence for encoding "UTF8": 0x00'),
      coded('42P01', 'relation does not exist'),
      coded('SQLITE_CONSTRAINT_UNIQUE'),
      new TypeError('The database connection is not open'),
      new Error('driver has already been destroyed'),
      'ECONNREFUSED',
      undefined,
    ]) {
      expect(isStorageUnavailable(error)).toBe(false);
    }
  });
});
