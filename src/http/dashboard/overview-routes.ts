import type { FastifyInstance, FastifyRequest } from 'fastify';
import { formatUsd } from '../../billing/money.js';
import { resolveTier } from '../../ratelimit/tiers.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentAccount, currentOrganisation } from './dashboard-session.js';
import { NO_MONEY, presentFreeAllowance } from './presenters.js';
import { addRow, emptySums, totalTokens } from './usage-aggregation.js';
import { dayRange, dayText, monthStartDay, utcDayNumber } from './utc-days.js';

const SPEND_DAYS = 30;

/** `GET /api/overview`: the numbers of the dashboard's first page, from the daily usage rollup. */
export function registerOverviewRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/overview', { config: { permission: 'organisation:read' } }, async (request) => {
    const account = currentAccount(request);
    const organisation = currentOrganisation(request).organisation;
    const now = deps.now();
    const today = utcDayNumber(now);
    const monthStart = monthStartDay(now);
    const firstDay = Math.min(monthStart, today - (SPEND_DAYS - 1));
    const [money, rows] = await Promise.all([
      deps.billing.balance(organisation.id),
      deps.usage.dailyTotals(organisation.id, dayText(firstDay), dayText(today)),
    ]);
    const todayText = dayText(today);
    const monthStartText = dayText(monthStart);
    const todaySums = emptySums();
    const monthSums = emptySums();
    const spendByDay = new Map<string, bigint>();
    for (const row of rows) {
      if (row.day === todayText) addRow(todaySums, row);
      // `YYYY-MM-DD` strings order like the days they name.
      if (row.day >= monthStartText && row.day <= todayText) addRow(monthSums, row);
      spendByDay.set(row.day, (spendByDay.get(row.day) ?? 0n) + row.costNano);
    }
    const tier = resolveTier(account.tier, deps.tiers);
    const balance = money ?? NO_MONEY;
    return {
      balanceUsd: formatUsd(balance.balanceNano),
      reservedUsd: formatUsd(balance.reservedNano),
      freeAllowance: presentFreeAllowance(balance, deps.freeTokensPerDay, now),
      tier: {
        name: tier.name,
        requestsPerMinute: tier.requestsPerMinute,
        tokensPerMinute: tier.tokensPerMinute ?? null,
      },
      tiers: Object.entries(deps.tiers).map(([name, definition]) => ({
        name,
        requestsPerMinute: definition.requestsPerMinute,
        tokensPerMinute: definition.tokensPerMinute ?? null,
      })),
      today: { requests: todaySums.requests, tokens: totalTokens(todaySums), costUsd: formatUsd(todaySums.costNano) },
      month: { requests: monthSums.requests, tokens: totalTokens(monthSums), costUsd: formatUsd(monthSums.costNano) },
      spend30d: dayRange(today - (SPEND_DAYS - 1), today).map((day) => ({
        day,
        costUsd: formatUsd(spendByDay.get(day) ?? 0n),
      })),
      baseUrl: publicBaseUrl(request, deps.publicBaseUrl),
    };
  });
}

/** Where clients reach this gateway: PUBLIC_BASE_URL, else the request's own scheme and host (proxy headers when trusted). */
export function publicBaseUrl(request: FastifyRequest, configured: string | undefined): string {
  return configured ?? `${request.protocol}://${request.host}`;
}
