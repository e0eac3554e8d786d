import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { presentLedgerEntry } from '../../billing/present-ledger-entry.js';
import { invalidRequest } from '../../canonical/errors.js';
import { EXPORT_CONTENT_TYPES } from '../usage-export-api.js';
import { timeBound } from '../usage-api.js';
import { parseInput } from './body-parsing.js';
import { csvLine } from './csv.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentOrganisation } from './dashboard-session.js';

const PAGE_SIZE = 1_000;

const exportQuery = z.object({
  from: timeBound,
  to: timeBound.optional(),
  format: z.enum(['csv', 'json']).default('csv'),
});

/** The entry's fields as `GET /v1/account/ledger` shows them, in CSV column order (all but `object`). */
const LEDGER_COLUMNS = [
  'id',
  'created_at',
  'kind',
  'amount_usd',
  'amount_nano_usd',
  'balance_after_usd',
  'balance_after_nano_usd',
  'request_id',
  'note',
  'unbilled_tokens',
  'unbilled_cost_usd',
  'unbilled_cost_nano_usd',
  'web_search_requests',
  'web_fetch_requests',
  'server_tool_cost_usd',
  'server_tool_cost_nano_usd',
] as const;

/**
 * `GET /api/billing/ledger/export?from=&to=&format=csv|json`: the session's organisation's ledger entries of any range, oldest
 * first, streamed in keyset pages like the usage export (JSON: one entry per line).
 */
export function registerLedgerExportRoute(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/billing/ledger/export', { config: { permission: 'billing:read' } }, async (request, reply) => {
    const organisationId = currentOrganisation(request).organisation.id;
    const query = parseInput(exportQuery, request.query);
    const { from, format } = query;
    const to = query.to ?? deps.now();
    if (from >= to) throw invalidRequest("Invalid value for 'from': it must be earlier than 'to'.", 'from');
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const extension = format === 'csv' ? 'csv' : 'ndjson';
    reply
      .header('content-type', EXPORT_CONTENT_TYPES[extension])
      .header(
        'content-disposition',
        `attachment; filename="tollgate-ledger-${day(from)}-to-${day(to - 1)}.${extension}"`,
      )
      .header('cache-control', 'no-store');
    return reply.send(Readable.from(ledgerText(deps, organisationId, { from, to }, format), { highWaterMark: 1 }));
  });
}

async function* ledgerText(
  deps: DashboardDependencies,
  accountId: string,
  range: { from: number; to: number },
  format: 'csv' | 'json',
): AsyncGenerator<string> {
  if (format === 'csv') yield csvLine([...LEDGER_COLUMNS]);
  let after: { createdAt: number; id: string } | null = null;
  for (;;) {
    const entries = await deps.usageExport.ledgerPage(accountId, range, after, PAGE_SIZE);
    if (entries.length === 0) return;
    let text = '';
    for (const entry of entries) {
      const shown = presentLedgerEntry(entry);
      text +=
        format === 'csv' ? csvLine(LEDGER_COLUMNS.map((column) => shown[column] ?? '')) : `${JSON.stringify(shown)}\n`;
    }
    yield text;
    if (entries.length < PAGE_SIZE) return;
    const last = entries[entries.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
  }
}
