/**
 * The Usage page's state in its URL (`/usage?range=7&model=beta-5.4&key=…&project=…&page=2`, or `from=2026-01-01&to=…` for
 * dates of one's own), so a view can be linked and survives a reload. A hand-edited value the page cannot show (a
 * day that does not exist, `from` after `to`, a day after today, a range past a year, a page that is no number) is
 * ignored: the default shows, never a blank page, and `ignored` names what was dropped.
 */

export type UsagePreset = 7 | 30 | 90;

/** A preset ending today, or the days from `from` to `to` (UTC, inclusive). */
export type UsageSpan = { days: UsagePreset } | { from: string; to: string };

export interface UsageQuery {
  span: UsageSpan;
  keyId: string | undefined;
  model: string | undefined;
  projectId?: string | undefined;
  /** The recent-requests page, 1 for the first. */
  page: number;
}

export const DEFAULT_RANGE: UsagePreset = 30;
const PRESETS: readonly UsagePreset[] = [7, 30, 90];
/** As the server's limit (src/http/dashboard/usage-range.ts). */
export const MAX_RANGE_DAYS = 366;
/** As far as a link may page ahead (use-cursor-pages.ts). */
const MAX_PAGE = 41;
const DAY_MS = 86_400_000;

/** The UTC day number of a `YYYY-MM-DD` that is a calendar day, else undefined. */
export function dayNumber(text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return undefined;
  const at = Date.parse(`${text}T00:00:00Z`);
  if (Number.isNaN(at) || new Date(at).toISOString().slice(0, 10) !== text) return undefined;
  return Math.floor(at / DAY_MS);
}

export function dayText(day: number): string {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/** Why a custom range cannot be shown, in words, or undefined when it can. */
export function customRangeProblem(from: string, to: string, now = Date.now()): string | undefined {
  const first = dayNumber(from);
  const last = dayNumber(to);
  if (first === undefined) return `“${from}” is not a date.`;
  if (last === undefined) return `“${to}” is not a date.`;
  if (first > last) return 'The start is after the end.';
  if (last > Math.floor(now / DAY_MS)) return 'The end is after today (UTC).';
  if (last - first + 1 > MAX_RANGE_DAYS) return `A range is at most ${MAX_RANGE_DAYS} days.`;
  return undefined;
}

export function readUsageQuery(search: string, now = Date.now()): UsageQuery & { ignored: string[] } {
  const params = new URLSearchParams(search);
  const ignored: string[] = [];
  let span: UsageSpan = { days: DEFAULT_RANGE };
  const from = params.get('from');
  const to = params.get('to');
  const range = params.get('range');
  if (from !== null || to !== null) {
    const problem = from === null || to === null ? 'A range needs both dates.' : customRangeProblem(from, to, now);
    if (problem === undefined && from !== null && to !== null) span = { from, to };
    else ignored.push(`dates (${problem})`);
  } else if (range !== null) {
    const days = Number(range);
    if ((PRESETS as readonly number[]).includes(days)) span = { days: days as UsagePreset };
    else ignored.push(`range “${range}”`);
  }
  const pageText = params.get('page');
  const pageNumber = Number(pageText);
  let page = 1;
  if (pageText !== null) {
    if (Number.isInteger(pageNumber) && pageNumber >= 1 && pageNumber <= MAX_PAGE) page = pageNumber;
    else ignored.push(`page “${pageText}”`);
  }
  return {
    span,
    keyId: params.get('key') || undefined,
    model: params.get('model') || undefined,
    projectId: params.get('project') || undefined,
    page,
    ignored,
  };
}

/** The page's search string for `query`, keeping other parameters (`request`) and leaving defaults out. */
export function writeUsageQuery(search: string, query: UsageQuery): string {
  const params = new URLSearchParams(search);
  const set = (name: string, value: string | undefined) =>
    value === undefined ? params.delete(name) : params.set(name, value);
  const custom = 'from' in query.span ? query.span : undefined;
  const days = 'days' in query.span ? query.span.days : undefined;
  set('range', days === undefined || days === DEFAULT_RANGE ? undefined : String(days));
  set('from', custom?.from);
  set('to', custom?.to);
  set('key', query.keyId);
  set('model', query.model);
  set('project', query.projectId);
  set('page', query.page === 1 ? undefined : String(query.page));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** The span's days in words: "last 30 days", "2026-01-01 to 2026-01-31". */
export function describeSpan(span: UsageSpan): string {
  return 'days' in span ? `last ${span.days} days` : `${span.from} to ${span.to}`;
}
