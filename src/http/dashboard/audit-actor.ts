import type { FastifyRequest } from 'fastify';
import type { AuditActor } from '../../accounts/audit/audit-log.js';
import { currentAccount } from './dashboard-session.js';

/** The signed-in person, as the audit log names them (their email as it is now, copied into the event). */
export function personActor(request: FastifyRequest): AuditActor {
  const account = currentAccount(request);
  return { type: 'person', accountId: account.id, email: account.email };
}

/** Who made a dashboard change and from where: the signed-in person and the request's client address. */
export function byPerson(request: FastifyRequest): { actor: AuditActor; ip: string } {
  return { actor: personActor(request), ip: request.ip };
}

/** The signed-in operator account acting in the operator view. */
export function operatorActor(request: FastifyRequest): AuditActor {
  const account = currentAccount(request);
  return { type: 'operator', accountId: account.id, email: account.email };
}
