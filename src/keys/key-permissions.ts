import { GatewayError } from '../canonical/errors.js';
import {
  API_SCOPES,
  spendPeriodNumber,
  type ApiScope,
  type KeyPermissions,
  type KeySpendCounters,
  type KeySpendLimit,
} from '../storage/key-permission-types.js';

/**
 * The rules over what a key may do (docs/architecture.md#key-scopes-and-limits; the permissions themselves are
 * plain data in storage/key-permission-types.ts): the route guard, the pipeline and billing enforce them, key
 * creation may not escalate past its parent.
 */

/** `read_only`: usage, ledger and account reads only. */
export const READ_ONLY_SCOPES: readonly ApiScope[] = ['usage:read'];

export function hasScope(permissions: KeyPermissions, scope: ApiScope): boolean {
  return permissions.scopes === null || permissions.scopes.includes(scope);
}

/** The scopes of a key, spelt out (`full` keys list every scope). */
export function effectiveScopes(permissions: KeyPermissions): readonly ApiScope[] {
  return permissions.scopes ?? API_SCOPES;
}

/** The key's own allowlist alone; requests go through `keyMayUseModel`, which adds its project's. */
export function modelAllowed(
  permissions: Pick<KeyPermissions, 'models'>,
  model: { id: string; family: string },
): boolean {
  return listAllows(permissions.models, model);
}

/** The 403 for a model the key may not use, naming the ones it may (before anything is held or sent). */
export function assertModelAllowed(
  permissions: Pick<KeyPermissions, 'models'>,
  model: { id: string; family: string },
): void {
  if (modelAllowed(permissions, model)) return;
  throw new GatewayError(
    'permission_denied',
    `This API key may not use the model '${model.id}'. It may use: ${(permissions.models ?? []).join(', ')}.`,
    { param: 'model' },
  );
}

/** What decides the models a key may use: its own allowlist and its project's. */
export interface KeyModelAllowlists {
  key: { permissions: Pick<KeyPermissions, 'models'> };
  project: { models: readonly string[] | null };
}

/** The key's own allowlist intersected with its project's: a model must be on both (a null list allows all). */
export function keyMayUseModel(auth: KeyModelAllowlists, model: { id: string; family: string }): boolean {
  return modelAllowed(auth.key.permissions, model) && listAllows(auth.project.models, model);
}

/** The 403 for a model the key or its project may not use, naming the list that refuses it. */
export function assertKeyMayUseModel(auth: KeyModelAllowlists, model: { id: string; family: string }): void {
  assertModelAllowed(auth.key.permissions, model);
  if (listAllows(auth.project.models, model)) return;
  throw new GatewayError(
    'permission_denied',
    `The project of this API key may not use the model '${model.id}'. It may use: ${(auth.project.models ?? []).join(', ')}.`,
    { param: 'model' },
  );
}

function listAllows(allowed: readonly string[] | null, model: { id: string; family: string }): boolean {
  return allowed === null || allowed.includes(model.id) || allowed.includes(model.family);
}

/** The 403 for a route whose scope the key lacks: one of `scopes` (or all of them, with `all`). */
export function missingScope(scopes: readonly ApiScope[], all: boolean): GatewayError {
  const named = scopes.map((scope) => `'${scope}'`).join(all ? ' and ' : ' or ');
  const noun = scopes.length > 1 && all ? 'scopes' : 'scope';
  return new GatewayError('permission_denied', `This API key lacks the ${noun} ${named} that this endpoint needs.`);
}

/** Settled spend of the current period as the counters say (an older period's counter means nothing spent yet). */
export function currentPeriodSpend(limit: KeySpendLimit, counters: KeySpendCounters, at: number): bigint {
  return counters.periodStart === spendPeriodNumber(limit.period, at) ? counters.usedNano : 0n;
}

/**
 * Why `child` would be more than `parent` (no escalation through key creation): the field name at fault, or
 * null when every permission of the child is within the parent's. A spend limit is within another when its
 * period is the same and its amount is not larger; rate limits when not larger.
 */
export function exceedsPermissions(
  child: KeyPermissions,
  parent: KeyPermissions,
  familyOf: (modelId: string) => string | undefined,
): string | null {
  if (parent.scopes !== null && effectiveScopes(child).some((scope) => !parent.scopes!.includes(scope)))
    return 'scopes';
  if (parent.models !== null) {
    if (child.models === null) return 'models';
    // A family word is within the parent only when the parent allows the whole family.
    if (
      child.models.some(
        (entry) => !parent.models!.includes(entry) && !isWithinFamilies(entry, parent.models!, familyOf),
      )
    )
      return 'models';
  }
  if (parent.spendLimit !== null) {
    if (
      child.spendLimit === null ||
      child.spendLimit.period !== parent.spendLimit.period ||
      child.spendLimit.limitNano > parent.spendLimit.limitNano
    )
      return 'spend_limit';
  }
  const parentRate = parent.rateLimit;
  if (parentRate !== null) {
    const childRate = child.rateLimit;
    if (
      parentRate.requestsPerMinute !== null &&
      (childRate?.requestsPerMinute == null || childRate.requestsPerMinute > parentRate.requestsPerMinute)
    )
      return 'rate_limit';
    if (
      parentRate.tokensPerMinute !== null &&
      (childRate?.tokensPerMinute == null || childRate.tokensPerMinute > parentRate.tokensPerMinute)
    )
      return 'rate_limit';
  }
  return null;
}

function isWithinFamilies(
  entry: string,
  allowed: readonly string[],
  familyOf: (id: string) => string | undefined,
): boolean {
  const family = familyOf(entry);
  return family !== undefined && allowed.includes(family);
}
