import type { CanonicalUsage } from '../canonical/usage.js';
import type { ReconcileRecord, UsageRepository } from '../storage/types.js';
import type { NanoUsd } from './money.js';
import type { ModelPrices } from './prices.js';
import { serverToolFees } from './server-tool-charge.js';
import { splitUsage, tokensByKind, TOKEN_KINDS, type TokenKind } from './usage-split.js';

/**
 * The reconcile (docs/reconcile.md): every settled request of a range of UTC days, read back from its usage record
 * and its ledger line, summed per model and day into what vendors reported and how the split rule of usage-split.ts
 * shared it out (free, billed, unbilled), with every request whose parts do not add up flagged by id.
 */

/** The token kinds the report shows: 5-minute and 1-hour cache writes together, as vendors report them. */
export const REPORT_KINDS = ['input', 'cacheRead', 'cacheWrite', 'output'] as const;
export type ReportKind = (typeof REPORT_KINDS)[number];
export type KindCounts = Record<ReportKind, number>;

export type ReconcileFlagReason =
  /** A token count or amount below zero, or more 1-hour cache writes than cache writes. */
  | 'negative_value'
  /** Free plus unbilled tokens exceed what the vendor reported: billed would be negative. */
  | 'parts_exceed_reported'
  /** Money was charged or left unbilled, yet the ledger has no usage line for the request. */
  | 'ledger_line_missing'
  /** The ledger line's amount is not minus the record's charge. */
  | 'ledger_amount_mismatch'
  /** The ledger line's unbilled tokens or money disagree with the record's. */
  | 'ledger_unbilled_mismatch'
  /** Replaying the split rule at the model's catalog prices does not give the stored charge and shortfall. */
  | 'split_mismatch';

export interface ReconcileFlag {
  requestId: string;
  accountId: string;
  model: string;
  day: string;
  reasons: ReconcileFlagReason[];
}

export interface ReconcileTotals {
  requests: number;
  reported: KindCounts;
  free: KindCounts;
  billed: KindCounts;
  /** Reported tokens neither the allowance nor money covered. */
  unbilled: KindCounts;
  /** Output the vendor produced past a refused slice: never delivered, never billed, beside the reported usage. */
  overrunOutputTokens: number;
  chargedNano: NanoUsd;
  unbilledNano: NanoUsd;
  /** The sum of the requests' ledger usage lines (minus: money taken). */
  ledgerNano: NanoUsd;
  /** Requests of models the catalog no longer prices: their per-kind billed and unbilled follow the kinds' order only. */
  unpricedRequests: number;
}

export interface ReconcileGroup extends ReconcileTotals {
  /** `YYYY-MM-DD`, UTC, of the request's start. */
  day: string;
  model: string;
}

export interface ReconcileReport {
  from: string;
  to: string;
  groups: ReconcileGroup[];
  totals: ReconcileTotals;
  /** Every flagged request, up to `MAX_LISTED_FLAGS`; `flaggedRequests` counts them all. */
  flags: ReconcileFlag[];
  flaggedRequests: number;
}

/** The most flagged requests listed by id: a broken rule flags every request, and the first thousand say enough. */
export const MAX_LISTED_FLAGS = 1_000;
const PAGE_SIZE = 1_000;
const MS_PER_DAY = 86_400_000;

/** One request's parts per report kind, and what is wrong with it (empty: it adds up). */
export interface ReconciledRequest {
  reported: KindCounts;
  free: KindCounts;
  billed: KindCounts;
  unbilled: KindCounts;
  overrunOutputTokens: number;
  priced: boolean;
  reasons: ReconcileFlagReason[];
}

function zeroKinds(): KindCounts {
  return { input: 0, cacheRead: 0, cacheWrite: 0, output: 0 };
}

function reportKind(kind: TokenKind): ReportKind {
  return kind === 'cacheWrite5m' || kind === 'cacheWrite1h' ? 'cacheWrite' : kind;
}

function usageOf(record: ReconcileRecord): CanonicalUsage {
  return {
    inputTokens: record.inputTokens,
    cacheReadTokens: record.cacheReadTokens,
    cacheWriteTokens: record.cacheWriteTokens,
    cacheWrite1hTokens: record.cacheWrite1hTokens,
    outputTokens: record.outputTokens,
    reasoningTokens: 0,
  };
}

/** Takes `amount` tokens from the kinds in the split rule's order; returns what each gave. */
function takeInOrder(left: Record<TokenKind, number>, amount: number): Record<TokenKind, number> {
  const taken = {} as Record<TokenKind, number>;
  let rest = Math.max(0, amount);
  for (const kind of TOKEN_KINDS) {
    const here = Math.min(rest, left[kind]);
    taken[kind] = here;
    left[kind] -= here;
    rest -= here;
  }
  return taken;
}

function addInto(target: KindCounts, source: Record<TokenKind, number>): void {
  for (const kind of TOKEN_KINDS) target[reportKind(kind)] += source[kind];
}

/**
 * Checks one settled request and splits its reported usage per kind. The split's own unbilled tokens are the ledger
 * line's (the record's also count output past a refused slice, which is no part of the reported usage). With the
 * model's prices, the split rule is replayed with the charge as the only money: it reproduces the stored split
 * exactly when the settlement followed the rule at these prices (the rule takes money in a fixed order, so the money
 * it spent is all it needs), which gives the per-kind parts and checks the charge and the shortfall. A model the
 * catalog no longer prices gets its parts in the rule's order alone.
 */
export function reconcileRequest(record: ReconcileRecord, prices: ModelPrices | undefined): ReconciledRequest {
  const reasons = new Set<ReconcileFlagReason>();
  const counts = [
    record.inputTokens,
    record.cacheReadTokens,
    record.cacheWriteTokens,
    record.cacheWrite1hTokens,
    record.outputTokens,
    record.freeTokens,
    record.unbilledTokens,
  ];
  const amounts = [record.costNano, record.unbilledNano, record.serverToolNano];
  if (
    counts.some((count) => !Number.isSafeInteger(count) || count < 0) ||
    amounts.some((value) => value < 0n) ||
    record.cacheWrite1hTokens > record.cacheWriteTokens ||
    (record.ledger !== null && (record.ledger.unbilledTokens < 0 || record.ledger.unbilledNano < 0n))
  ) {
    reasons.add('negative_value');
  }
  const ledger = record.ledger;
  if (ledger === null) {
    if (record.costNano !== 0n || record.unbilledNano !== 0n) reasons.add('ledger_line_missing');
  } else {
    if (ledger.amountNano !== -record.costNano) reasons.add('ledger_amount_mismatch');
    if (ledger.unbilledNano !== record.unbilledNano || ledger.unbilledTokens > record.unbilledTokens)
      reasons.add('ledger_unbilled_mismatch');
  }
  const splitUnbilled = Math.max(0, ledger?.unbilledTokens ?? 0);
  const overrunOutputTokens = Math.max(0, record.unbilledTokens - splitUnbilled);

  const usage = usageOf(record);
  const byKind = tokensByKind(usage);
  const reportedTotal = TOKEN_KINDS.reduce((sum, kind) => sum + byKind[kind], 0);
  if (record.freeTokens + splitUnbilled > reportedTotal) reasons.add('parts_exceed_reported');

  const reported = zeroKinds();
  const free = zeroKinds();
  const billed = zeroKinds();
  const unbilled = zeroKinds();
  addInto(reported, byKind);
  if (prices !== undefined) {
    const fees = serverToolFees({ serverToolNano: record.serverToolNano });
    const replay = splitUsage(usage, prices, { freeTokens: record.freeTokens, moneyNano: [record.costNano] }, fees);
    if (
      replay.freeTokens !== record.freeTokens ||
      replay.billedNano !== record.costNano ||
      replay.unbilledTokens !== splitUnbilled ||
      replay.unbilledNano !== record.unbilledNano
    ) {
      reasons.add('split_mismatch');
    }
    for (const kind of TOKEN_KINDS) {
      const part = replay.kinds[kind];
      free[reportKind(kind)] += part.free;
      billed[reportKind(kind)] += part.billed;
      unbilled[reportKind(kind)] += part.unbilled;
    }
  } else {
    const left = { ...byKind };
    addInto(free, takeInOrder(left, record.freeTokens));
    const billedTotal = Math.max(0, reportedTotal - record.freeTokens - splitUnbilled);
    addInto(billed, takeInOrder(left, billedTotal));
    addInto(unbilled, left);
  }
  return {
    reported,
    free,
    billed,
    unbilled,
    overrunOutputTokens,
    priced: prices !== undefined,
    reasons: [...reasons],
  };
}

export function emptyTotals(): ReconcileTotals {
  return {
    requests: 0,
    reported: zeroKinds(),
    free: zeroKinds(),
    billed: zeroKinds(),
    unbilled: zeroKinds(),
    overrunOutputTokens: 0,
    chargedNano: 0n,
    unbilledNano: 0n,
    ledgerNano: 0n,
    unpricedRequests: 0,
  };
}

function addRequest(totals: ReconcileTotals, record: ReconcileRecord, parts: ReconciledRequest): void {
  totals.requests += 1;
  for (const kind of REPORT_KINDS) {
    totals.reported[kind] += parts.reported[kind];
    totals.free[kind] += parts.free[kind];
    totals.billed[kind] += parts.billed[kind];
    totals.unbilled[kind] += parts.unbilled[kind];
  }
  totals.overrunOutputTokens += parts.overrunOutputTokens;
  totals.chargedNano += record.costNano;
  totals.unbilledNano += record.unbilledNano;
  totals.ledgerNano += record.ledger?.amountNano ?? 0n;
  if (!parts.priced) totals.unpricedRequests += 1;
}

export function isoDay(at: number): string {
  return new Date(at).toISOString().slice(0, 10);
}

/** Sums checked requests into the report: per model and day (sorted by day, then model), and in all. */
export class ReconcileAccumulator {
  private readonly groups = new Map<string, ReconcileGroup>();
  private readonly totals = emptyTotals();
  private readonly flags: ReconcileFlag[] = [];
  private flagged = 0;

  constructor(private readonly pricesOf: (modelId: string) => ModelPrices | undefined) {}

  add(record: ReconcileRecord): void {
    const day = isoDay(record.createdAt);
    const parts = reconcileRequest(record, this.pricesOf(record.model));
    const key = `${day}\u0000${record.model}`;
    let group = this.groups.get(key);
    if (group === undefined) {
      group = { day, model: record.model, ...emptyTotals() };
      this.groups.set(key, group);
    }
    addRequest(group, record, parts);
    addRequest(this.totals, record, parts);
    if (parts.reasons.length > 0) {
      this.flagged += 1;
      if (this.flags.length < MAX_LISTED_FLAGS)
        this.flags.push({
          requestId: record.requestId,
          accountId: record.accountId,
          model: record.model,
          day,
          reasons: parts.reasons,
        });
    }
  }

  report(from: string, to: string): ReconcileReport {
    const groups = [...this.groups.values()].sort((a, b) =>
      a.day === b.day ? (a.model < b.model ? -1 : a.model > b.model ? 1 : 0) : a.day < b.day ? -1 : 1,
    );
    return { from, to, groups, totals: this.totals, flags: this.flags, flaggedRequests: this.flagged };
  }
}

/** An inclusive range of UTC days, `YYYY-MM-DD`. */
export interface DayRange {
  from: string;
  to: string;
}

/** Reads every settled request of the range, a page at a time, and reports on it. */
export async function reconcileLedger(
  usage: Pick<UsageRepository, 'reconcilePage'>,
  range: DayRange,
  pricesOf: (modelId: string) => ModelPrices | undefined,
): Promise<ReconcileReport> {
  const fromMs = Date.parse(`${range.from}T00:00:00Z`);
  const toMs = Date.parse(`${range.to}T00:00:00Z`) + MS_PER_DAY;
  const accumulator = new ReconcileAccumulator(pricesOf);
  let cursor: { createdAt: number; requestId: string } | undefined;
  for (;;) {
    const page = await usage.reconcilePage(fromMs, toMs, PAGE_SIZE, cursor);
    for (const record of page) accumulator.add(record);
    const last = page[page.length - 1];
    if (last === undefined || page.length < PAGE_SIZE) break;
    cursor = { createdAt: last.createdAt, requestId: last.requestId };
  }
  return accumulator.report(range.from, range.to);
}

/** A reconcile range refused (CLI exit 2, API 400): the option at fault and what is wrong with it. */
export class ReconcileRangeError extends Error {
  override name = 'ReconcileRangeError';

  constructor(
    readonly field: 'from' | 'to',
    /** Follows the option's name: `must be …`, `is after …`. */
    readonly problem: string,
  ) {
    super(`${field} ${problem}`);
  }
}

const DEFAULT_RANGE_DAYS = 7;

function checkedDay(text: string, option: 'from' | 'to'): string {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  const at = match === null ? Number.NaN : Date.UTC(Number(match[1]), Number(match[2]) - 1, Number(match[3]));
  if (Number.isNaN(at) || isoDay(at) !== text)
    throw new ReconcileRangeError(option, `must be a UTC day as YYYY-MM-DD, got '${text}'.`);
  return text;
}

/**
 * The range from `--from` / `--to` (either may be left out): without `to`, today (UTC); without `from`, the 7 days
 * ending at `to`. Refuses a day that is not a real `YYYY-MM-DD` date, and `from` after `to`.
 */
export function reconcileRange(from: string | undefined, to: string | undefined, now: number): DayRange {
  const end = to === undefined ? isoDay(now) : checkedDay(to, 'to');
  const start =
    from === undefined
      ? isoDay(Date.parse(`${end}T00:00:00Z`) - (DEFAULT_RANGE_DAYS - 1) * MS_PER_DAY)
      : checkedDay(from, 'from');
  if (start > end) throw new ReconcileRangeError('from', `(${start}) is after --to (${end}).`);
  return { from: start, to: end };
}
