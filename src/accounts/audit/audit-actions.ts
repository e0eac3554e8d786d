/**
 * Every action the audit log records, as `area.verb`. A filter names one action, or an area (`key`, `money`) for
 * all of its actions. New actions (members, invitations) are added here.
 */
export const AUDIT_ACTIONS = [
  'key.create',
  'key.update',
  'key.rotate',
  'key.revoke',
  'tier.purchase',
  'tier.renewal',
  'tier.grant',
  'organisation.rename',
  'organisation.billing_details',
  'money.topup',
  'money.redeem',
  'money.credit',
  'member.invite',
  'member.invite_revoke',
  'member.join',
  'member.role',
  'member.remove',
  'member.leave',
  'member.provision',
  'organisation.sign_in_policy',
  'sign_in.success',
  'sign_in.failure',
  'project.created',
  'project.renamed',
  'project.models_changed',
  'project.archived',
  'limit.set',
  'limit.cleared',
  'alert.created',
  'alert.updated',
  'alert.deleted',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** The actions a filter names: the action itself, or every action of an area; null when it names none. */
export function actionsMatching(filter: string): AuditAction[] | null {
  const exact = AUDIT_ACTIONS.find((action) => action === filter);
  if (exact !== undefined) return [exact];
  const area = AUDIT_ACTIONS.filter((action) => action.startsWith(`${filter}.`));
  return area.length === 0 ? null : area;
}
