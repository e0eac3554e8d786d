import { REPORT_KINDS, type KindCounts, type ReconcileReport, type ReconcileTotals } from './ledger-reconcile.js';
import { formatUsd } from './money.js';

/** A token count per kind as the JSON report names it. */
export interface PresentedKinds {
  input: number;
  cache_read: number;
  cache_write: number;
  output: number;
}

export interface PresentedTotals {
  requests: number;
  reported: PresentedKinds;
  free: PresentedKinds;
  billed: PresentedKinds;
  unbilled: PresentedKinds;
  overrun_output_tokens: number;
  charged_nano_usd: string;
  charged_usd: string;
  unbilled_nano_usd: string;
  unbilled_usd: string;
  ledger_nano_usd: string;
  unpriced_requests: number;
}

/** The report as the CLI's `--json` and the operator API give it: amounts as exact decimal strings. */
export interface PresentedReconcile {
  ok: boolean;
  from: string;
  to: string;
  groups: Array<{ day: string; model: string } & PresentedTotals>;
  totals: PresentedTotals;
  flagged_requests: number;
  flags: Array<{ request_id: string; account_id: string; model: string; day: string; reasons: string[] }>;
}

function kinds(counts: KindCounts): PresentedKinds {
  return { input: counts.input, cache_read: counts.cacheRead, cache_write: counts.cacheWrite, output: counts.output };
}

function totals(group: ReconcileTotals): PresentedTotals {
  return {
    requests: group.requests,
    reported: kinds(group.reported),
    free: kinds(group.free),
    billed: kinds(group.billed),
    unbilled: kinds(group.unbilled),
    overrun_output_tokens: group.overrunOutputTokens,
    charged_nano_usd: group.chargedNano.toString(),
    charged_usd: formatUsd(group.chargedNano),
    unbilled_nano_usd: group.unbilledNano.toString(),
    unbilled_usd: formatUsd(group.unbilledNano),
    ledger_nano_usd: group.ledgerNano.toString(),
    unpriced_requests: group.unpricedRequests,
  };
}

export function presentReconcile(report: ReconcileReport): PresentedReconcile {
  return {
    ok: report.flaggedRequests === 0,
    from: report.from,
    to: report.to,
    groups: report.groups.map((group) => ({ day: group.day, model: group.model, ...totals(group) })),
    totals: totals(report.totals),
    flagged_requests: report.flaggedRequests,
    flags: report.flags.map((flag) => ({
      request_id: flag.requestId,
      account_id: flag.accountId,
      model: flag.model,
      day: flag.day,
      reasons: flag.reasons,
    })),
  };
}

function sum(counts: KindCounts): number {
  return REPORT_KINDS.reduce((total, kind) => total + counts[kind], 0);
}

/** The report as a table for a terminal: one line per day and model, then the flagged requests. */
export function reconcileText(report: ReconcileReport): string {
  const header = `${'day'.padEnd(10)}  ${'model'.padEnd(22)} ${'requests'.padStart(8)} ${'reported'.padStart(12)} ${'free'.padStart(10)} ${'billed'.padStart(12)} ${'unbilled'.padStart(10)} ${'charged USD'.padStart(14)}`;
  const line = (day: string, model: string, group: ReconcileTotals) =>
    `${day.padEnd(10)}  ${model.padEnd(22)} ${String(group.requests).padStart(8)} ${String(sum(group.reported)).padStart(12)} ${String(sum(group.free)).padStart(10)} ${String(sum(group.billed)).padStart(12)} ${String(sum(group.unbilled)).padStart(10)} ${formatUsd(group.chargedNano).padStart(14)}`;
  const lines = [`Reconcile ${report.from} .. ${report.to} (UTC days; tokens are all kinds together)`, header];
  for (const group of report.groups) lines.push(line(group.day, group.model, group));
  lines.push(line('total', '', report.totals));
  if (report.flaggedRequests === 0)
    lines.push('OK: every request adds up (free + billed + unbilled = reported, ledger agrees).');
  else {
    lines.push(
      `FLAGGED: ${report.flaggedRequests} request${report.flaggedRequests === 1 ? '' : 's'} do not add up${report.flags.length < report.flaggedRequests ? ` (first ${report.flags.length} listed)` : ''}:`,
    );
    for (const flag of report.flags)
      lines.push(
        `  ${flag.requestId}  ${flag.day}  ${flag.model}  account ${flag.accountId}  ${flag.reasons.join(', ')}`,
      );
  }
  return lines.join('\n');
}
