import { describe, expect, it } from 'vitest';
import { searchesTheWeb } from './search-intent.js';

const turn = { forced: false, followsToolResults: false, clientCalls: 0 };

describe('searchesTheWeb', () => {
  it('searches for a question or a lookup, not for a greeting', () => {
    expect(searchesTheWeb({ ...turn, lastUserText: 'What is the toll today?' })).toBe(true);
    expect(searchesTheWeb({ ...turn, lastUserText: 'Find the opening hours.' })).toBe(true);
    expect(searchesTheWeb({ ...turn, lastUserText: 'Say hello. [[sim words=3]]' })).toBe(false);
  });

  it('searches when forced, unless the turn follows tool results or calls a client tool', () => {
    expect(searchesTheWeb({ ...turn, forced: true, lastUserText: 'hi' })).toBe(true);
    expect(searchesTheWeb({ ...turn, followsToolResults: true, lastUserText: 'What now?' })).toBe(false);
    expect(searchesTheWeb({ ...turn, clientCalls: 1, lastUserText: 'Show my notes?' })).toBe(false);
  });
});
