import type { UsageRange } from '../api/endpoints';

/**
 * The Usage page's state in its URL (`/usage?range=7&model=beta-5.4&key=…`), so a view can be linked and survives
 * a reload. A hand-edited value that is not one the page offers is ignored: the default shows, never a blank page.
 */
export interface UsageQuery {
  range: UsageRange;
  keyId: string | undefined;
  model: string | undefined;
}

export const DEFAULT_RANGE: UsageRange = 30;
const RANGES: readonly UsageRange[] = [7, 30, 90];

export function readUsageQuery(search: string): UsageQuery {
  const params = new URLSearchParams(search);
  const range = Number(params.get('range'));
  return {
    range: (RANGES as readonly number[]).includes(range) ? (range as UsageRange) : DEFAULT_RANGE,
    keyId: params.get('key') || undefined,
    model: params.get('model') || undefined,
  };
}

/** The page's search string for `query`, keeping other parameters (`request`) and leaving defaults out. */
export function writeUsageQuery(search: string, query: UsageQuery): string {
  const params = new URLSearchParams(search);
  const set = (name: string, value: string | undefined) =>
    value === undefined ? params.delete(name) : params.set(name, value);
  set('range', query.range === DEFAULT_RANGE ? undefined : String(query.range));
  set('key', query.keyId);
  set('model', query.model);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
