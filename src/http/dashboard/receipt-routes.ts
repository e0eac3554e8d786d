import type { FastifyInstance } from 'fastify';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { notFound } from './dashboard-error.js';
import { currentOrganisation } from './dashboard-session.js';
import { hasReceipt, RECEIPT_CONTENT_SECURITY_POLICY, receiptHtml } from './receipt-html.js';

type EntryParams = { Params: { ledgerEntryId: string } };

/** Printable receipts of the organisation's payments, and the billing details they carry. */
export function registerReceiptRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get<EntryParams>(
    '/receipts/:ledgerEntryId',
    { config: { permission: 'billing:read' } },
    async (request, reply) => {
      const { organisation } = currentOrganisation(request);
      const id = request.params.ledgerEntryId;
      // Looked up within the organisation's own ledger: another organisation's entry is a 404 like an unknown one.
      const entry = id.length > 100 ? null : await deps.receipts.ledgerEntry(organisation.id, id);
      if (entry === null || !hasReceipt(entry)) throw notFound(`No receipt for ledger entry '${id.slice(0, 100)}'.`);
      return reply
        .header('content-type', 'text/html; charset=utf-8')
        .header('content-security-policy', RECEIPT_CONTENT_SECURITY_POLICY)
        .header('x-content-type-options', 'nosniff')
        .send(receiptHtml(entry, organisation));
    },
  );

  api.get('/organisation/billing-details', { config: { permission: 'billing:read' } }, async (request) => {
    const { organisation } = currentOrganisation(request);
    return { billingName: organisation.billingName, billingAddress: organisation.billingAddress };
  });
}
