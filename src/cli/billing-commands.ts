import { presentLedgerEntry } from '../billing/present-ledger-entry.js';
import { creditAccount } from '../billing/operator-credit.js';
import { AuditLog } from '../accounts/audit/audit-log.js';
import { formatUsd, parseUsd, type NanoUsd } from '../billing/money.js';
import { createRedemptionCodes, MAX_CODES_PER_BATCH } from '../billing/redemption-codes.js';
import { readJournalDirectory } from '../billing/settlement-journal.js';
import { reconcileLedger, reconcileRange, ReconcileRangeError } from '../billing/ledger-reconcile.js';
import { presentReconcile, reconcileText } from '../billing/present-reconcile.js';
import type { ModelPrices } from '../billing/prices.js';
import type { Storage } from '../storage/types.js';
import { UsageError } from './usage-error.js';
import { walletTarget } from './wallet-target.js';

/** Operator commands on money: top-ups, redemption codes, the ledger check. */
export const BILLING_USAGE = `  credit --email E --usd AMOUNT [--note TEXT]    add prepaid balance (AMOUNT is a decimal string, e.g. 25 or 12.50)
                                                 to the person's personal organisation; --organisation ID instead
                                                 of --email for any organisation
  codes create --usd AMOUNT --count N            mint N (1..${MAX_CODES_PER_BATCH}) redemption codes worth AMOUNT each; prints them (shown once)
  ledger verify                                  check every balance equals the sum of its ledger, and that no journaled
                                                 settlement waits to be applied (exit 1 otherwise)
  ledger show --email E [--limit N]              the wallet's latest ledger entries (default 20); or --organisation ID
  ledger reconcile [--from YYYY-MM-DD] [--to YYYY-MM-DD]
                                                 per model and UTC day: reported, free, billed and unbilled tokens;
                                                 flags requests that do not add up (exit 1; a bad range exits 2)
`;

export const BILLING_COMMANDS = ['credit', 'codes create', 'ledger verify', 'ledger show', 'ledger reconcile'] as const;
export type BillingCommand = (typeof BILLING_COMMANDS)[number];

export function isBillingCommand(command: string): command is BillingCommand {
  return (BILLING_COMMANDS as readonly string[]).includes(command);
}

export interface BillingOptions {
  email?: string | undefined;
  /** Instead of `email`: the organisation whose wallet `credit` and `ledger show` act on. */
  organisation?: string | undefined;
  usd?: string | undefined;
  note?: string | undefined;
  count?: string | undefined;
  limit?: string | undefined;
  /** The settlement journal's directory (`ledger verify` reports its entries the store does not have yet). */
  journalDirectory?: string | undefined;
  /** `ledger reconcile`'s range of UTC days. */
  from?: string | undefined;
  to?: string | undefined;
  /** A model's catalog prices by public id: how `ledger reconcile` replays the split rule. */
  pricesOf?: (modelId: string) => ModelPrices | undefined;
}

/** What a command prints (`data` with --json, `text` otherwise) and its exit code. */
export interface CommandOutput {
  data: unknown;
  text: string;
  exitCode: number;
}

export async function runBillingCommand(
  command: BillingCommand,
  storage: Storage,
  options: BillingOptions,
  now: number = Date.now(),
): Promise<CommandOutput> {
  switch (command) {
    case 'credit':
      return credit(storage, options, now);
    case 'codes create':
      return createCodes(storage, options, now);
    case 'ledger verify':
      return verifyLedger(storage, options.journalDirectory);
    case 'ledger show':
      return showLedger(storage, options);
    case 'ledger reconcile':
      return reconcile(storage, options, now);
  }
}

async function credit(storage: Storage, options: BillingOptions, now: number): Promise<CommandOutput> {
  const target = await walletTarget(storage, options);
  const amount = positiveUsd(options);
  const note = options.note?.trim() || null;
  const result = await creditAccount(storage.billing, target.organisationId, amount, note, now);
  await new AuditLog(storage.audit, storage.organisations, () => now).record({
    organisationId: target.organisationId,
    actor: { type: 'operator' },
    ip: null,
    action: 'money.credit',
    after: { amountNanoUsd: amount, balanceNanoUsd: result.balanceNano, note },
  });
  return {
    data: {
      // A personal organisation's id is its person's account id: the field keeps the name it had.
      account_id: target.organisationId,
      organisation_id: target.organisationId,
      email: target.email,
      amount_usd: formatUsd(amount),
      amount_nano_usd: amount.toString(),
      balance_usd: formatUsd(result.balanceNano),
      balance_nano_usd: result.balanceNano.toString(),
      note,
    },
    text: `Credited $${formatUsd(amount)} to ${target.label}; balance now $${formatUsd(result.balanceNano)}.`,
    exitCode: 0,
  };
}

async function createCodes(storage: Storage, options: BillingOptions, now: number): Promise<CommandOutput> {
  const amount = positiveUsd(options);
  const count = wholeNumber(options, 'count', 1, MAX_CODES_PER_BATCH);
  if (count === undefined) throw new UsageError('--count is required.');
  const codes = await createRedemptionCodes(storage.billing, amount, count, now);
  return {
    data: { codes, amount_usd: formatUsd(amount), amount_nano_usd: amount.toString() },
    text: `${codes.join('\n')}\n(${codes.length} code${codes.length === 1 ? '' : 's'} worth $${formatUsd(amount)} each; shown once: store them now)`,
    exitCode: 0,
  };
}

async function verifyLedger(storage: Storage, journalDirectory: string | undefined): Promise<CommandOutput> {
  const mismatches = (await storage.billing.verifyLedger()).map((row) => ({
    account_id: row.accountId,
    balance_nano_usd: row.balanceNano.toString(),
    ledger_sum_nano_usd: row.ledgerSumNano.toString(),
  }));
  const journal = journalDirectory === undefined ? undefined : await pendingJournalEntries(storage, journalDirectory);
  const pending = journal?.pending ?? [];
  const ok = mismatches.length === 0 && pending.length === 0;
  const lines: string[] = [];
  if (mismatches.length === 0) lines.push('Ledger OK: every balance equals the sum of its ledger.');
  else {
    lines.push(
      `Ledger MISMATCH on ${mismatches.length} account${mismatches.length === 1 ? '' : 's'} (balance vs sum of ledger, nano-USD):`,
      ...mismatches.map(
        (row) => `  ${row.account_id}  balance ${row.balance_nano_usd}  ledger ${row.ledger_sum_nano_usd}`,
      ),
    );
  }
  if (journal !== undefined) {
    lines.push(
      pending.length === 0
        ? `Settlement journal (${journalDirectory}): nothing waiting to be applied.`
        : `Settlement journal (${journalDirectory}): ${pending.length} settlement${pending.length === 1 ? '' : 's'} not applied yet (a gateway replays them when the database answers):`,
      ...pending.map((entry) => `  ${entry.request_id}  account ${entry.account_id}  journaled ${entry.journaled_at}`),
    );
    if (journal.unreadableLines > 0)
      lines.push(
        `  ${journal.unreadableLines} unreadable line${journal.unreadableLines === 1 ? '' : 's'} (a torn last line after a crash is one: never acknowledged to a client)`,
      );
  }
  return {
    data: {
      ok,
      mismatches,
      ...(journal === undefined
        ? {}
        : { journal: { directory: journalDirectory, pending, unreadable_lines: journal.unreadableLines } }),
    },
    text: lines.join('\n'),
    exitCode: ok ? 0 : 1,
  };
}

/** Journal entries (in any instance's file in the directory) whose request the store has no usage record of. */
async function pendingJournalEntries(storage: Storage, directory: string) {
  const { entries, unreadableLines } = await readJournalDirectory(directory);
  const recorded = await storage.usage.recordedRequestIds(entries.map((entry) => entry.usage.requestId));
  const seen = new Set<string>();
  const pending = entries
    .filter(
      (entry) =>
        !recorded.has(entry.usage.requestId) && !seen.has(entry.usage.requestId) && seen.add(entry.usage.requestId),
    )
    .map((entry) => ({
      request_id: entry.usage.requestId,
      account_id: entry.usage.accountId,
      journaled_at: new Date(entry.journaledAt).toISOString(),
    }));
  return { pending, unreadableLines };
}

async function reconcile(storage: Storage, options: BillingOptions, now: number): Promise<CommandOutput> {
  let range: ReturnType<typeof reconcileRange>;
  try {
    range = reconcileRange(options.from, options.to, now);
  } catch (error) {
    if (error instanceof ReconcileRangeError) throw new UsageError(`--${error.field} ${error.problem}`, 2);
    throw error;
  }
  const report = await reconcileLedger(storage.usage, range, options.pricesOf ?? (() => undefined));
  return {
    data: presentReconcile(report),
    text: reconcileText(report),
    exitCode: report.flaggedRequests === 0 ? 0 : 1,
  };
}

async function showLedger(storage: Storage, options: BillingOptions): Promise<CommandOutput> {
  const target = await walletTarget(storage, options);
  const limit = wholeNumber(options, 'limit', 1, 1000) ?? 20;
  const [balance, entries] = await Promise.all([
    storage.billing.balance(target.organisationId),
    storage.billing.ledger(target.organisationId, limit),
  ]);
  const balanceNano = balance?.balanceNano ?? 0n;
  const rows = entries.map(presentLedgerEntry);
  const lines = rows.map(
    (row) =>
      `${row.created_at}  ${row.kind.padEnd(10)}  ${signed(row.amount_usd).padStart(16)}  → ${row.balance_after_usd.padStart(14)}  ${row.request_id ?? row.note ?? ''}`,
  );
  return {
    data: {
      account_id: target.organisationId,
      organisation_id: target.organisationId,
      email: target.email,
      balance_usd: formatUsd(balanceNano),
      balance_nano_usd: balanceNano.toString(),
      entries: rows,
    },
    text: `${target.label}: balance $${formatUsd(balanceNano)}\n${lines.join('\n') || 'No ledger entries.'}`,
    exitCode: 0,
  };
}

function signed(usd: string): string {
  return usd.startsWith('-') ? usd : `+${usd}`;
}

function requireOption(options: BillingOptions, name: 'usd'): string {
  const value = options[name];
  if (value === undefined || value.trim() === '') throw new UsageError(`--${name} is required.`);
  return value;
}

/** `--usd` as exact nano-USD, from a decimal string only (never through a float), and more than zero. */
function positiveUsd(options: BillingOptions): NanoUsd {
  const text = requireOption(options, 'usd');
  let amount: NanoUsd;
  try {
    amount = parseUsd(text);
  } catch {
    throw new UsageError(
      `--usd must be a decimal amount in USD such as 25 or 12.50 (at most 9 decimals), got '${text}'.`,
    );
  }
  if (amount <= 0n) throw new UsageError(`--usd must be more than 0, got '${text}'.`);
  return amount;
}

function wholeNumber(options: BillingOptions, name: 'count' | 'limit', min: number, max: number): number | undefined {
  const raw = options[name];
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max)
    throw new UsageError(`--${name} must be a whole number from ${min} to ${max}.`);
  return Number(raw);
}
