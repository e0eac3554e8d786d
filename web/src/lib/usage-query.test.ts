import { describe, expect, it } from 'vitest';
import { readUsageQuery, writeUsageQuery } from './usage-query';

const NOW = Date.parse('2026-03-15T10:00:00Z');

describe('the Usage page in its URL', () => {
  it('reads what it wrote: presets, custom dates, filters and the page', () => {
    for (const query of [
      { span: { days: 7 as const }, keyId: 'key_1', model: 'beta-5.4', page: 3 },
      { span: { from: '2026-03-01', to: '2026-03-15' }, keyId: undefined, model: undefined, page: 1 },
      { span: { days: 30 as const }, keyId: undefined, model: undefined, page: 1 },
    ]) {
      const search = writeUsageQuery('?request=req_1', query);
      expect(search).toContain('request=req_1');
      expect(readUsageQuery(search, NOW)).toEqual({ ...query, ignored: [] });
    }
    // Defaults stay out of the URL.
    expect(writeUsageQuery('', { span: { days: 30 }, keyId: undefined, model: undefined, page: 1 })).toBe('');
  });

  it('ignores what it cannot show, says so, and shows the default instead', () => {
    for (const search of [
      '?from=2026-03-10&to=2026-03-01',
      '?from=2026-02-30&to=2026-03-01',
      '?from=2026-03-10&to=2026-03-16',
      '?from=2025-01-01&to=2026-03-15',
      '?from=2026-03-10',
      '?range=5',
    ]) {
      const read = readUsageQuery(search, NOW);
      expect(read.span, search).toEqual({ days: 30 });
      expect(read.ignored, search).toHaveLength(1);
    }
    for (const page of ['0', '-1', '2.5', 'abc', '999']) {
      const read = readUsageQuery(`?page=${page}`, NOW);
      expect(read.page, page).toBe(1);
      expect(read.ignored, page).toEqual([`page “${page}”`]);
    }
  });
});
