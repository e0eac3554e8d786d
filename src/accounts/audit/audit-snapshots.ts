import type { ProjectRecord } from '../../storage/project-types.js';
import type { ApiKeyRecord } from '../../storage/types.js';

/**
 * What a key looks like in the audit log: what a person set and can see, never its hash or secret (the record is
 * built field by field, so a field added to keys later stays out until someone adds it here on purpose).
 */
export function keySnapshot(key: ApiKeyRecord) {
  const { permissions } = key;
  return {
    name: key.name,
    hint: key.hint,
    projectId: key.projectId,
    expiresAt: key.expiresAt,
    revokedAt: key.revokedAt,
    scopes: permissions.scopes === null ? null : [...permissions.scopes],
    models: permissions.models === null ? null : [...permissions.models],
    spendLimit:
      permissions.spendLimit === null
        ? null
        : { nanoUsd: permissions.spendLimit.limitNano.toString(), period: permissions.spendLimit.period },
    rateLimit:
      permissions.rateLimit === null
        ? null
        : {
            requestsPerMinute: permissions.rateLimit.requestsPerMinute,
            tokensPerMinute: permissions.rateLimit.tokensPerMinute,
          },
  };
}

/** What a project looks like in the audit log: its name, allowlist and archive time. */
export function projectSnapshot(project: ProjectRecord) {
  return {
    name: project.name,
    models: project.models === null ? null : [...project.models],
    archivedAt: project.archivedAt,
  };
}

/** Field names that may hold a secret: dropped wherever they appear, as a second guard behind the snapshots. */
const SECRET_FIELD = /secret|hash|password|token$|^key$|^code$/i;

/** JSON text of an audit value: amounts (bigint) as decimal strings, secret-looking fields left out. */
export function auditJson(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return JSON.stringify(value, (field, item: unknown) => {
    if (field !== '' && SECRET_FIELD.test(field)) return undefined;
    return typeof item === 'bigint' ? item.toString() : item;
  });
}
