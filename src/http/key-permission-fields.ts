import { z } from 'zod';
import { formatUsd, parseUsd } from '../billing/money.js';
import { invalidRequest, GatewayError } from '../canonical/errors.js';
import { FAMILY_VENDOR, MODEL_DEFINITIONS } from '../catalog/models.js';
import { currentPeriodSpend, effectiveScopes, exceedsPermissions, READ_ONLY_SCOPES } from '../keys/key-permissions.js';
import {
  API_SCOPES,
  FULL_PERMISSIONS,
  isApiScope,
  SPEND_PERIODS,
  spendPeriodResetsAt,
  type ApiScope,
  type KeyPermissions,
  type KeySpendLimit,
  type SpendPeriod,
} from '../storage/key-permission-types.js';
import type { ApiKeyChange, ApiKeyRecord } from '../storage/types.js';

/**
 * The permission fields of a key as the HTTP API (`POST`/`PATCH /v1/keys`) and the dashboard take and show them:
 * `scopes`, `models`, `spend_limit`, `rate_limit`. Every bad value is a 400 naming its field, before anything
 * is written.
 */

/** The largest spend limit a key may carry: far above any real budget, and safe as a JS number of nano-USD. */
const MAX_SPEND_LIMIT_NANO = 1_000_000n * 1_000_000_000n;

export const permissionFieldShapes = {
  scopes: z.union([z.string(), z.array(z.string()).max(API_SCOPES.length * 2)]).nullish(),
  models: z.array(z.string().min(1).max(100)).max(200).nullish(),
  spend_limit: z
    .object({ usd: z.union([z.string(), z.number()]), period: z.string() })
    .strict()
    .nullish(),
  limits: z
    .array(z.object({ usd: z.union([z.string(), z.number()]), period: z.string() }).strict())
    .max(SPEND_PERIODS.length)
    .nullish(),
  rate_limit: z
    .object({
      requests_per_minute: z.number().int().min(1).max(1_000_000).nullish(),
      tokens_per_minute: z.number().int().min(1).max(1_000_000_000).nullish(),
    })
    .strict()
    .nullish(),
};

/** The fields as parsed by `permissionFieldShapes` (each undefined when absent). */
export interface PermissionFields {
  scopes?: string | string[] | null | undefined;
  models?: string[] | null | undefined;
  spend_limit?: { usd: string | number; period: string } | null | undefined;
  limits?: Array<{ usd: string | number; period: string }> | null | undefined;
  rate_limit?:
    | { requests_per_minute?: number | null | undefined; tokens_per_minute?: number | null | undefined }
    | null
    | undefined;
}

const MODEL_IDS: ReadonlySet<string> = new Set(MODEL_DEFINITIONS.map((definition) => definition.id));
const FAMILIES: ReadonlySet<string> = new Set(Object.keys(FAMILY_VENDOR));

export function modelFamily(id: string): string | undefined {
  return MODEL_DEFINITIONS.find((definition) => definition.id === id)?.family;
}

/**
 * The permission changes the fields ask for: a field absent stays as it is (undefined), `null` means "no
 * restriction". Throws the 400 naming the first bad field.
 */
export function parsePermissionFields(fields: PermissionFields): PermissionChange {
  const change: PermissionChange = {};
  if (fields.scopes !== undefined) change.scopes = parseScopes(fields.scopes);
  if (fields.models !== undefined) change.models = fields.models === null ? null : parseModels(fields.models);
  if (fields.spend_limit !== undefined)
    change.spendLimit = fields.spend_limit === null ? null : parseSpendLimit(fields.spend_limit);
  if (fields.limits !== undefined) {
    if (fields.spend_limit !== undefined)
      throw invalidRequest("Give 'spend_limit' (one limit) or 'limits' (one per period), not both.", 'limits');
    change.limits = parseKeyLimits(fields.limits ?? []);
  }
  if (fields.rate_limit !== undefined) {
    const rate = fields.rate_limit;
    const rpm = rate?.requests_per_minute ?? null;
    const tpm = rate?.tokens_per_minute ?? null;
    change.rateLimit = rpm === null && tpm === null ? null : { requestsPerMinute: rpm, tokensPerMinute: tpm };
  }
  return change;
}

function parseScopes(value: string | string[] | null): readonly ApiScope[] | null {
  if (value === null || value === 'full') return null;
  if (value === 'read_only') return READ_ONLY_SCOPES;
  if (typeof value === 'string') {
    throw invalidRequest(
      `Invalid value for 'scopes': '${value}'. Give "full", "read_only" or a list of: ${API_SCOPES.join(', ')}.`,
      'scopes',
    );
  }
  if (value.length === 0)
    throw invalidRequest(
      `Invalid value for 'scopes': the list is empty. Give at least one of: ${API_SCOPES.join(', ')}.`,
      'scopes',
    );
  const unknown = value.filter((scope) => !isApiScope(scope));
  if (unknown.length > 0) {
    throw invalidRequest(
      `Invalid value for 'scopes': unknown scope ${unknown.map((scope) => `'${scope}'`).join(', ')}. Valid scopes: ${API_SCOPES.join(', ')}.`,
      'scopes',
    );
  }
  const set = new Set(value as ApiScope[]);
  // Every scope is the standard key: stored as such, so scopes added later reach it too.
  if (API_SCOPES.every((scope) => set.has(scope))) return null;
  return API_SCOPES.filter((scope) => set.has(scope));
}

/** A model allowlist: known model ids and family words, none twice; the 400 naming `models` otherwise. */
export function parseModels(value: string[]): readonly string[] {
  if (value.length === 0)
    throw invalidRequest(
      "Invalid value for 'models': the list is empty. Give model ids or family words, or null for every model.",
      'models',
    );
  const unknown = value.filter((entry) => !MODEL_IDS.has(entry) && !FAMILIES.has(entry));
  if (unknown.length > 0) {
    throw invalidRequest(
      `Invalid value for 'models': unknown model or family ${unknown.map((entry) => `'${entry}'`).join(', ')}. Valid families: ${[...FAMILIES].join(', ')}; valid models: ${[...MODEL_IDS].join(', ')}.`,
      'models',
    );
  }
  return [...new Set(value)];
}

/** The permission changes of `parsePermissionFields`. */
export type PermissionChange = Pick<ApiKeyChange, 'scopes' | 'models' | 'spendLimit' | 'limits' | 'rateLimit'>;

function parseSpendLimit(
  value: { usd: string | number; period: string },
  field = 'spend_limit',
  periods: readonly SpendPeriod[] = SPEND_PERIODS,
): KeySpendLimit {
  if (!(periods as readonly string[]).includes(value.period)) {
    throw invalidRequest(
      `Invalid value for '${field}.period': '${value.period}'. Valid periods: ${periods.join(', ')}.`,
      `${field}.period`,
    );
  }
  return { limitNano: parseLimitUsd(value.usd, `${field}.usd`), period: value.period as SpendPeriod };
}

/**
 * A spend limit's amount: a non-negative decimal USD amount (a JSON number only in its plain decimal spelling, read
 * as text, never as a float), at most $1,000,000; the 400 naming `field` otherwise.
 */
export function parseLimitUsd(value: string | number, field: string): bigint {
  const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : value;
  let limitNano: bigint;
  try {
    limitNano = parseUsd(text);
  } catch {
    throw invalidRequest(
      `Invalid value for '${field}': '${String(value)}' is not a non-negative decimal USD amount (such as "0.05", at most 9 decimals).`,
      field,
    );
  }
  if (limitNano > MAX_SPEND_LIMIT_NANO) throw invalidRequest(`Invalid value for '${field}': at most 1000000.`, field);
  return limitNano;
}

/** A key's limits, one per period, day first; the 400 naming the first bad entry otherwise. */
function parseKeyLimits(values: ReadonlyArray<{ usd: string | number; period: string }>): KeySpendLimit[] {
  const limits = values.map((value, index) => parseSpendLimit(value, `limits.${index}`));
  const periods = limits.map((limit) => limit.period);
  const twice = periods.find((period, index) => periods.indexOf(period) !== index);
  if (twice !== undefined)
    throw invalidRequest(`Invalid value for 'limits': the period '${twice}' is given twice.`, 'limits');
  return limits.sort((a, b) => SPEND_PERIODS.indexOf(a.period) - SPEND_PERIODS.indexOf(b.period));
}

/**
 * The permissions a key ends up with after `change`, which must be within the caller's own (no escalation
 * through the key API): the 403 `permission_denied` naming the field otherwise.
 */
export function assertWithinCaller(result: KeyPermissions, caller: KeyPermissions): void {
  const field = exceedsPermissions(result, caller, modelFamily);
  if (field === null) return;
  throw new GatewayError(
    'permission_denied',
    `This API key cannot give another key more than it has itself: '${field}' would exceed this key's own ${field.replace('_', ' ')}.`,
    { param: field },
  );
}

/**
 * A key's limits after `change` (`current` when it names none): `limits`, or the one `spend_limit`, or none.
 */
export function limitsAfter(change: PermissionChange, current: readonly KeySpendLimit[]): readonly KeySpendLimit[] {
  if (change.limits !== undefined) return change.limits;
  if (change.spendLimit === undefined) return current;
  return change.spendLimit === null ? [] : [change.spendLimit];
}

/**
 * Every spend limit of the caller binds a key it makes or changes: the key needs a limit of the same period, no larger
 * (a key without the caller's monthly limit could spend a month of its daily one). The 403 naming `field` otherwise.
 */
export function assertLimitsWithinCaller(
  limits: readonly KeySpendLimit[],
  caller: readonly KeySpendLimit[],
  field: 'limits' | 'spend_limit',
): void {
  for (const own of caller) {
    const same = limits.find((limit) => limit.period === own.period);
    if (same !== undefined && same.limitNano <= own.limitNano) continue;
    throw new GatewayError(
      'permission_denied',
      `This API key cannot give another key more than it has itself: '${field}' would lack or exceed this key's own ${own.period} limit.`,
      { param: field },
    );
  }
}

/**
 * A key creating a key in another project: the project's allowlist must be within the caller's project's, or the new
 * key could call models the caller's project keeps from it (the 403 naming `field` otherwise).
 */
export function assertProjectWithinCaller(
  target: { name: string; models: readonly string[] | null },
  caller: { models: readonly string[] | null },
  field: string,
): void {
  const within = exceedsPermissions(
    { ...FULL_PERMISSIONS, models: target.models },
    { ...FULL_PERMISSIONS, models: caller.models },
    modelFamily,
  );
  if (within === null) return;
  throw new GatewayError(
    'permission_denied',
    `This API key cannot create a key in the project '${target.name}': it allows models this key's own project does not.`,
    { param: field },
  );
}

/**
 * The permissions of a key after `change`. A field the change leaves out keeps `base` (the key's own for an
 * update; for a new key, the creator's, so a restricted key creates restricted keys unless told otherwise).
 */
export function applyChange(base: KeyPermissions, change: PermissionChange): KeyPermissions {
  // With several limits, the first (the shortest period) is the one a key's `spendLimit` stands for.
  const spendLimit = change.limits === undefined ? change.spendLimit : (change.limits[0] ?? null);
  return {
    scopes: change.scopes === undefined ? base.scopes : change.scopes,
    models: change.models === undefined ? base.models : change.models,
    spendLimit: spendLimit === undefined ? base.spendLimit : spendLimit,
    rateLimit: change.rateLimit === undefined ? base.rateLimit : change.rateLimit,
  };
}

const toSeconds = (ms: number | null): number | null => (ms === null ? null : Math.floor(ms / 1000));

/** The permission fields of a key as `GET /v1/keys` shows them (snake_case; money as exact USD strings). */
export function presentPermissionFields(record: ApiKeyRecord, now: number) {
  const { permissions } = record;
  const limit = permissions.spendLimit;
  return {
    scopes: [...effectiveScopes(permissions)],
    models: permissions.models === null ? null : [...permissions.models],
    spend_limit:
      limit === null
        ? null
        : {
            usd: formatUsd(limit.limitNano),
            period: limit.period,
            spent_usd: formatUsd(currentPeriodSpend(limit, record.spend, now)),
            held_usd: formatUsd(record.spend.reservedNano),
            resets_at: toSeconds(spendPeriodResetsAt(limit.period, now)),
          },
    limits: record.limits.map((entry) => ({
      usd: formatUsd(entry.limitNano),
      period: entry.period,
      spent_usd: formatUsd(currentPeriodSpend(entry, entry, now)),
      held_usd: formatUsd(entry.reservedNano),
      resets_at: toSeconds(spendPeriodResetsAt(entry.period, now)),
    })),
    rate_limit:
      permissions.rateLimit === null
        ? null
        : {
            requests_per_minute: permissions.rateLimit.requestsPerMinute,
            tokens_per_minute: permissions.rateLimit.tokensPerMinute,
          },
  };
}

/**
 * The dashboard's spelling of the same fields (camelCase, like the rest of its API: docs/dashboard-api.md):
 * `spendLimit: { usd, period }`, `rateLimit: { requestsPerMinute, tokensPerMinute }`.
 */
export const dashboardPermissionShapes = {
  scopes: permissionFieldShapes.scopes,
  models: permissionFieldShapes.models,
  spendLimit: permissionFieldShapes.spend_limit,
  rateLimit: z
    .object({
      requestsPerMinute: z.number().int().min(1).max(1_000_000).nullish(),
      tokensPerMinute: z.number().int().min(1).max(1_000_000_000).nullish(),
    })
    .strict()
    .nullish(),
};

export function fromDashboardFields(fields: {
  scopes?: string | string[] | null | undefined;
  models?: string[] | null | undefined;
  spendLimit?: { usd: string | number; period: string } | null | undefined;
  rateLimit?:
    | { requestsPerMinute?: number | null | undefined; tokensPerMinute?: number | null | undefined }
    | null
    | undefined;
}): PermissionFields {
  const out: PermissionFields = {};
  if (fields.scopes !== undefined) out.scopes = fields.scopes;
  if (fields.models !== undefined) out.models = fields.models;
  if (fields.spendLimit !== undefined) out.spend_limit = fields.spendLimit;
  if (fields.rateLimit !== undefined) {
    out.rate_limit =
      fields.rateLimit === null
        ? null
        : {
            requests_per_minute: fields.rateLimit.requestsPerMinute ?? null,
            tokens_per_minute: fields.rateLimit.tokensPerMinute ?? null,
          };
  }
  return out;
}

/** A key's permissions for the dashboard (camelCase; times in epoch ms; money as exact USD strings). */
export function presentDashboardPermissions(record: ApiKeyRecord, now: number) {
  const fields = presentPermissionFields(record, now);
  const limit = fields.spend_limit;
  return {
    scopes: fields.scopes,
    models: fields.models,
    spendLimit:
      limit === null
        ? null
        : {
            usd: limit.usd,
            period: limit.period,
            spentUsd: limit.spent_usd,
            heldUsd: limit.held_usd,
            resetsAt: limit.resets_at === null ? null : limit.resets_at * 1000,
          },
    limits: fields.limits.map((entry) => ({
      usd: entry.usd,
      period: entry.period,
      spentUsd: entry.spent_usd,
      heldUsd: entry.held_usd,
      resetsAt: entry.resets_at === null ? null : entry.resets_at * 1000,
    })),
    rateLimit:
      fields.rate_limit === null
        ? null
        : {
            requestsPerMinute: fields.rate_limit.requests_per_minute,
            tokensPerMinute: fields.rate_limit.tokens_per_minute,
          },
  };
}
