import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  allAuditEvents,
  auditCsv,
  auditFilter,
  auditJsonArray,
  auditPage,
  auditQuerySchema,
  exportFileName,
  presentAuditEvent,
} from '../audit-reading.js';
import { organisationName } from '../../accounts/organisation-service.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { notFound } from './dashboard-error.js';
import { currentOrganisation } from './dashboard-session.js';
import { byPerson } from './audit-actor.js';

/** Longest billing name and address: what a receipt's header has room for. */
export const BILLING_NAME_MAX = 200;
export const BILLING_ADDRESS_MAX = 1000;

// Control characters would hide text on a printed receipt; the address keeps its line breaks (\n only).
const billingDetailsBody = z
  .object({
    billingName: z
      .string()
      .trim()
      .max(BILLING_NAME_MAX, `Billing names are at most ${BILLING_NAME_MAX} characters.`)
      .refine((text) => !/\p{Cc}/u.test(text), 'Billing names have no control characters.')
      .nullable(),
    billingAddress: z
      .string()
      .trim()
      .max(BILLING_ADDRESS_MAX, `Billing addresses are at most ${BILLING_ADDRESS_MAX} characters.`)
      .refine((text) => !/[^\P{Cc}\n]/u.test(text), 'Billing addresses have no control characters but line breaks.')
      .nullable(),
  })
  .strict();

const renameBody = z.object({ name: z.string().max(1000) }).strict();

/** The organisation's audit log (list, filters, exports) and its audited settings: name and billing details. */
export function registerAuditRoutes(api: FastifyInstance, deps: DashboardDependencies): void {
  api.get('/audit', { config: { permission: 'audit:read' } }, async (request) => {
    const input = parseInput(auditQuerySchema, request.query);
    const filter = auditFilter(currentOrganisation(request).organisation.id, input);
    const { events, nextCursor } = await auditPage(deps.audit, filter, input.limit);
    return { events: events.map(presentAuditEvent), nextCursor };
  });

  api.get('/audit/export', { config: { permission: 'audit:read' } }, async (request, reply) => {
    const input = parseInput(auditQuerySchema, request.query);
    const format = input.format ?? 'csv';
    const filter = auditFilter(currentOrganisation(request).organisation.id, input);
    const events = allAuditEvents(deps.audit, filter);
    return reply
      .header('content-type', format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
      .header('content-disposition', `attachment; filename="${exportFileName(format, deps.now())}"`)
      .send(Readable.from(format === 'csv' ? auditCsv(events) : auditJsonArray(events)));
  });

  api.put('/organisation/name', { config: { permission: 'organisation:manage' } }, async (request) => {
    const { name } = parseInput(renameBody, request.body);
    const organisationId = currentOrganisation(request).organisation.id;
    const changed = await deps.audit.rename(organisationName(name), {
      organisationId,
      ...byPerson(request),
    });
    if (changed === null) throw notFound(`No organisation with id '${organisationId}'.`);
    return { name: changed.after.name };
  });

  api.put('/organisation/billing-details', { config: { permission: 'billing:manage' } }, async (request) => {
    const body = parseInput(billingDetailsBody, request.body);
    const organisationId = currentOrganisation(request).organisation.id;
    const details = {
      billingName: body.billingName === null || body.billingName === '' ? null : body.billingName,
      billingAddress: body.billingAddress === null || body.billingAddress === '' ? null : body.billingAddress,
    };
    const changed = await deps.audit.setBillingDetails(details, {
      organisationId,
      ...byPerson(request),
    });
    if (changed === null) throw notFound(`No organisation with id '${organisationId}'.`);
    return { billingName: changed.after.billingName, billingAddress: changed.after.billingAddress };
  });
}
