import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { invalidRequest } from '../../canonical/errors.js';
import { MS_PER_DAY } from '../../billing/free-allowance.js';
import { formatUsd, parseUsd, type NanoUsd } from '../../billing/money.js';
import { creditAccount } from '../../billing/operator-credit.js';
import { createRedemptionCodes, MAX_CODES_PER_BATCH } from '../../billing/redemption-codes.js';
import { reconcileLedger, reconcileRange, ReconcileRangeError } from '../../billing/ledger-reconcile.js';
import { presentReconcile } from '../../billing/present-reconcile.js';
import { normalizeEmail } from '../../storage/database-schema.js';
import { pageLimit } from '../../protocols/shared/query-params.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentAccount } from './dashboard-session.js';
import { presentAccount } from './presenters.js';
import { operatorActor } from './audit-actor.js';
import { tierSnapshot } from '../../billing/tier-snapshot.js';
import { dayText, utcDayNumber } from './utc-days.js';

const listQuery = z.object({
  query: z.string().max(254).optional(),
  limit: pageLimit(200, 50),
  cursor: z.string().min(1).max(400).optional(),
});
const usd = z.string().max(30);
const creditBody = z
  .object({ amountUsd: usd, note: z.string().trim().max(500, 'Notes are at most 500 characters.').nullish() })
  .strict();
const reconcileQuery = z.object({ from: z.string().max(10).optional(), to: z.string().max(10).optional() }).strict();
const tierBody = z.object({ tier: z.string().min(1).max(100) }).strict();
const disabledBody = z.object({ disabled: z.boolean() }).strict();
const codesBody = z
  .object({
    amountUsd: usd,
    count: z.number().int().min(1).max(MAX_CODES_PER_BATCH),
    expiresInDays: z.number().int().min(1).max(3650).nullish(),
  })
  .strict();

type IdParams = { Params: { id: string } };
const ADMIN = { config: { access: 'admin' as const } };

/** The operator view (role `admin`): accounts with balance and usage, credit, tier, disable, redemption codes. */
export function registerAdminRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/admin/accounts', ADMIN, async (request) => {
    const { query, limit, cursor } = parseInput(listQuery, request.query);
    const afterEmail = cursor === undefined ? undefined : decodeCursor(cursor);
    const today = utcDayNumber(deps.now());
    const [rows, usage] = await Promise.all([
      deps.accountRepository.listWithBalances({
        ...(query === undefined ? {} : { query: query.trim() }),
        limit: limit + 1,
        ...(afterEmail === undefined ? {} : { afterEmail }),
      }),
      deps.usage.totalsByAccount(dayText(today - 29), dayText(today)),
    ]);
    const usageByAccount = new Map(usage.map((totals) => [totals.accountId, totals]));
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      accounts: page.map((account) => ({
        id: account.id,
        email: account.email,
        role: account.role,
        tier: account.tier,
        disabled: account.disabled,
        balanceUsd: formatUsd(account.balanceNano),
        requests30d: usageByAccount.get(account.id)?.requests ?? 0,
        costUsd30d: formatUsd(usageByAccount.get(account.id)?.costNano ?? 0n),
        createdAt: account.createdAt,
      })),
      nextCursor:
        rows.length > limit && last !== undefined
          ? Buffer.from(normalizeEmail(last.email), 'utf8').toString('base64url')
          : null,
    };
  });

  api.post<IdParams>('/admin/accounts/:id/credit', ADMIN, async (request) => {
    const { amountUsd, note } = parseInput(creditBody, request.body);
    const account = await deps.accounts.findById(request.params.id);
    const amount = positiveUsd(amountUsd, 'amountUsd');
    const operator = currentAccount(request);
    const text =
      note === undefined || note === null || note === ''
        ? `Credited by ${operator.email}`
        : `${note} (by ${operator.email})`;
    const { balanceNano } = await creditAccount(deps.billing, account.id, amount, text, deps.now());
    await deps.audit.record({
      organisationId: account.id,
      actor: operatorActor(request),
      ip: request.ip,
      action: 'money.credit',
      after: { amountNanoUsd: amount, balanceNanoUsd: balanceNano, note: text },
    });
    // A credit counts as a payment: it may reach a tier by total paid.
    await deps.tierUpgrades.refresh(account.id);
    return { balanceUsd: formatUsd(balanceNano) };
  });

  api.post<IdParams>('/admin/accounts/:id/tier', ADMIN, async (request) => {
    const { tier } = parseInput(tierBody, request.body);
    const account = await deps.accounts.findById(request.params.id);
    // The operator's tier is a floor: a higher tier the user bought or reached by payments stays in force.
    const before = await deps.tierUpgrades.status(account.id);
    const status = await deps.tierUpgrades.grant(account.id, tier);
    await deps.audit.record({
      organisationId: account.id,
      actor: operatorActor(request),
      ip: request.ip,
      action: 'tier.grant',
      target: { type: 'tier', id: status.grantedTier },
      before: tierSnapshot(before),
      after: tierSnapshot(status),
    });
    return { account: presentOperatorAccount({ ...account, tier: status.current.name }) };
  });

  api.post<IdParams>('/admin/accounts/:id/disabled', ADMIN, async (request) => {
    const { disabled } = parseInput(disabledBody, request.body);
    if (disabled && request.params.id === currentAccount(request).id) {
      throw invalidRequest('Operators cannot disable their own account.', 'disabled');
    }
    const account = await deps.accounts.setDisabled(request.params.id, disabled);
    // Its keys fail from the next request on (authentication reads `disabled` each time); its sessions end now.
    if (disabled) await deps.sessions.endAll(account.id);
    return { account: presentOperatorAccount(account) };
  });

  api.post('/admin/codes', ADMIN, async (request, reply) => {
    const { amountUsd, count, expiresInDays } = parseInput(codesBody, request.body);
    const now = deps.now();
    const codes = await createRedemptionCodes(
      deps.billing,
      positiveUsd(amountUsd, 'amountUsd'),
      count,
      now,
      expiresInDays == null ? null : now + expiresInDays * MS_PER_DAY,
    );
    return reply.code(201).send({ codes });
  });

  api.get('/admin/upstreams', ADMIN, async () => ({ credentials: deps.upstreams?.() ?? [] }));

  // The ledger reconcile (docs/reconcile.md), as `tollgate ledger reconcile --json` gives it: flags answer 200 with
  // `ok: false`, so that a monitor reads the report; only a bad range is a 400.
  api.get('/admin/ledger/reconcile', ADMIN, async (request) => {
    const { from, to } = parseInput(reconcileQuery, request.query);
    let range: ReturnType<typeof reconcileRange>;
    try {
      range = reconcileRange(from, to, deps.now());
    } catch (error) {
      if (error instanceof ReconcileRangeError)
        throw invalidRequest(`'${error.field}' ${error.problem.replace('--to', "'to'")}`, error.field);
      throw error;
    }
    return presentReconcile(await reconcileLedger(deps.usage, range, deps.pricesOf ?? (() => undefined)));
  });
}

function presentOperatorAccount(account: Parameters<typeof presentAccount>[0]) {
  return { ...presentAccount(account), disabled: account.disabled };
}

function positiveUsd(text: string, field: string): NanoUsd {
  let amount: NanoUsd;
  try {
    amount = parseUsd(text);
  } catch {
    throw invalidRequest(`'${field}' must be a USD amount such as "25" or "12.50" (at most 9 decimals).`, field);
  }
  if (amount <= 0n) throw invalidRequest(`'${field}' must be more than 0.`, field);
  return amount;
}

function decodeCursor(cursor: string): string {
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  if (Buffer.from(decoded, 'utf8').toString('base64url') !== cursor)
    throw invalidRequest("Invalid 'cursor': pass the 'nextCursor' of a previous page unchanged.", 'cursor');
  return decoded;
}
