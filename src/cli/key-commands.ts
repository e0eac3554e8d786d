import { AccountService } from '../accounts/account-service.js';
import { AuditLog } from '../accounts/audit/audit-log.js';
import { keySnapshot } from '../accounts/audit/audit-snapshots.js';
import { ProjectService } from '../accounts/project-service.js';
import {
  parsePermissionFields,
  presentPermissionFields,
  type PermissionFields,
} from '../http/key-permission-fields.js';
import { keyStatus } from '../http/keys-api.js';
import { FULL_PERMISSIONS } from '../storage/key-permission-types.js';
import { KeyService } from '../keys/key-service.js';
import type { ApiKeyChange, ApiKeyRecord, Storage } from '../storage/types.js';
import { UsageError } from './usage-error.js';

/**
 * `keys create | update | list` with scopes and limits (docs/architecture.md#key-scopes-and-limits); revoke stays in
 * cli-main.
 */
export const KEY_USAGE = `  keys create --email E --name N [--expires-in-days D] [--project ID] [KEY OPTIONS]
                                                 prints the new key (shown once); in the default project without
                                                 --project
  keys update --email E --id ID [--name N] [KEY OPTIONS]   changes apply from the key's next request
  keys list --email E
      KEY OPTIONS: --scopes full|read_only|models:use,usage:read,keys:manage,account:redeem
                   --models all|ID-OR-FAMILY,...   --spend-limit USD|none --period day|week|month|total
                   --rpm N|none --tpm N|none
`;

export interface KeyCommandValues {
  email?: string | undefined;
  name?: string | undefined;
  id?: string | undefined;
  'expires-in-days'?: string | undefined;
  scopes?: string | undefined;
  models?: string | undefined;
  'spend-limit'?: string | undefined;
  period?: string | undefined;
  rpm?: string | undefined;
  tpm?: string | undefined;
  project?: string | undefined;
}

export function isKeyCommand(command: string): boolean {
  return command === 'keys create' || command === 'keys update' || command === 'keys list';
}

export interface KeyCommandOutput {
  data: unknown;
  text: string;
}

export async function runKeyCommand(
  command: string,
  storage: Storage,
  values: KeyCommandValues,
  now = Date.now(),
): Promise<KeyCommandOutput> {
  const account = await new AccountService(storage.accounts).findByEmail(requiredValue(values, 'email'));
  const keys = new KeyService(storage.apiKeys);
  const audit = new AuditLog(storage.audit, storage.organisations);
  if (command === 'keys list') {
    const rows = (await keys.list(account.id)).map((key) => presentRow(key, now));
    return { data: rows, text: rows.map(describeRow).join('\n') || 'No keys.' };
  }
  // The same validation as POST/PATCH /v1/keys: a bad value names its option's field, and nothing is written.
  const permissions = parsePermissionFields(permissionFlags(values));
  if (command === 'keys create') {
    const days = wholeNumber(values['expires-in-days'], 'expires-in-days');
    const name = requiredValue(values, 'name');
    const projects = new ProjectService(storage.projects);
    const projectId = await projects.projectForNewKey(account.id, values.project, 'project');
    // The operator's key of the person's personal organisation (its id is the account's): no creator recorded.
    const created = await keys.create(account.id, null, {
      name,
      expiresAt: days === undefined ? null : now + days * 86_400_000,
      permissions: { ...FULL_PERMISSIONS, ...permissions },
      projectId,
    });
    await audit.record({
      organisationId: account.id,
      actor: { type: 'operator' },
      ip: null,
      action: 'key.create',
      target: { type: 'key', id: created.record.id },
      after: keySnapshot(created.record),
    });
    const row = presentRow(created.record, now);
    return {
      data: { ...row, key: created.secret, expires_at: created.record.expiresAt },
      text: `${created.secret}\n(id ${created.record.id}; shown once: store it now)\n${describeRow(row)}`,
    };
  }
  const change: ApiKeyChange = { ...permissions };
  if (values.name !== undefined) change.name = values.name;
  const before = await keys.find(account.id, requiredValue(values, 'id'));
  const updated = await keys.update(account.id, requiredValue(values, 'id'), change);
  await audit.record({
    organisationId: account.id,
    actor: { type: 'operator' },
    ip: null,
    action: 'key.update',
    target: { type: 'key', id: updated.id },
    before: before === null ? null : keySnapshot(before),
    after: keySnapshot(updated),
  });
  const row = presentRow(updated, now);
  return { data: row, text: describeRow(row) };
}

/** The options as the API's fields: absent options stay absent (unchanged on update). */
function permissionFlags(values: KeyCommandValues): PermissionFields {
  const fields: PermissionFields = {};
  if (values.scopes !== undefined)
    fields.scopes =
      values.scopes === 'full' || values.scopes === 'read_only' ? values.scopes : splitList(values.scopes);
  if (values.models !== undefined) fields.models = values.models === 'all' ? null : splitList(values.models);
  const limit = values['spend-limit'];
  if (limit !== undefined) {
    if (limit === 'none') fields.spend_limit = null;
    else {
      if (values.period === undefined) throw new UsageError('--spend-limit needs --period day, month or total.');
      fields.spend_limit = { usd: limit, period: values.period };
    }
  } else if (values.period !== undefined) throw new UsageError('--period goes with --spend-limit.');
  if (values.rpm !== undefined || values.tpm !== undefined) {
    fields.rate_limit = {
      requests_per_minute: limitNumber(values.rpm, 'rpm'),
      tokens_per_minute: limitNumber(values.tpm, 'tpm'),
    };
  }
  return fields;
}

function splitList(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
}

function limitNumber(value: string | undefined, name: string): number | null {
  if (value === undefined || value === 'none') return null;
  return wholeNumber(value, name)!;
}

function wholeNumber(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number.`);
  return Number(value);
}

function requiredValue(values: KeyCommandValues, name: 'email' | 'name' | 'id'): string {
  const value = values[name];
  if (value === undefined || value === '') throw new UsageError(`--${name} is required.`);
  return value;
}

function presentRow(key: ApiKeyRecord, now: number) {
  return {
    id: key.id,
    name: key.name,
    hint: key.hint,
    project_id: key.projectId,
    status: keyStatus(key, now),
    ...presentPermissionFields(key, now),
  };
}

function describeRow(row: ReturnType<typeof presentRow>): string {
  const limits: string[] = [];
  if (row.scopes.length < 4) limits.push(`scopes ${row.scopes.join(',')}`);
  if (row.models !== null) limits.push(`models ${row.models.join(',')}`);
  if (row.spend_limit !== null)
    limits.push(`$${row.spend_limit.spent_usd} of $${row.spend_limit.usd} per ${row.spend_limit.period}`);
  if (row.rate_limit !== null) {
    if (row.rate_limit.requests_per_minute !== null) limits.push(`${row.rate_limit.requests_per_minute} rpm`);
    if (row.rate_limit.tokens_per_minute !== null) limits.push(`${row.rate_limit.tokens_per_minute} tpm`);
  }
  return `${row.id}  ${row.hint}  ${row.status}  ${row.project_id}  ${row.name}${limits.length === 0 ? '' : `  (${limits.join('; ')})`}`;
}
