import { randomUUID } from 'node:crypto';
import { GatewayError, invalidRequest } from '../canonical/errors.js';
import type {
  AccountMoneySnapshot,
  ApiKeyChange,
  ApiKeyRecord,
  ApiKeyRepository,
  KeyOrganisation,
  KeyProject,
  NewApiKey,
} from '../storage/types.js';
import { FULL_PERMISSIONS, type KeyPermissions, type KeySpendLimit } from '../storage/key-permission-types.js';
import { apiKeyHint, digestsEqual, generateApiKey, hashApiKey, hasApiKeyShape } from './key-format.js';
import { isPlaygroundKeyId, newPlaygroundKey, playgroundKeyId } from './playground-key.js';

export interface AuthenticatedKey {
  key: ApiKeyRecord;
  /** Who the key's requests are billed to, at which tier. */
  organisation: KeyOrganisation;
  /** The key's project: its model allowlist binds the key as much as the key's own. */
  project: KeyProject;
  /** The organisation's money as read with the key, where storage reads it in the same lookup (admission's hint). */
  money?: AccountMoneySnapshot;
}

export interface CreatedApiKey {
  record: ApiKeyRecord;
  /** The full key: returned once, never stored. */
  secret: string;
}

export interface CreateKeyOptions {
  name: string;
  expiresAt?: number | null;
  /** Omitted: a standard key with every permission. */
  permissions?: KeyPermissions;
  /** A live project of the organisation (the caller checked); omitted: the organisation's default project. */
  projectId?: string;
  /** The key's spend limits, one per period; omitted: `permissions.spendLimit` alone. */
  limits?: readonly KeySpendLimit[];
}

/** How often `last_used_at` is written per key at most: a write per request would cost more than the lookup. */
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

export class KeyService {
  private readonly lastUsedWrites = new Map<string, number>();

  constructor(
    private readonly keys: ApiKeyRepository,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A key of the organisation (whose wallet its requests spend), recording the person who created it (null: the
   * operator, or a key created with another key).
   */
  async create(organisationId: string, createdBy: string | null, options: CreateKeyOptions): Promise<CreatedApiKey> {
    const { record, secret } = this.newKey(
      organisationId,
      options.name,
      options.expiresAt ?? null,
      options.permissions ?? FULL_PERMISSIONS,
      createdBy,
    );
    if (options.projectId !== undefined) record.projectId = options.projectId;
    if (options.limits !== undefined) record.limits = options.limits;
    return { record: await this.keys.create(record), secret };
  }

  find(accountId: string, keyId: string): Promise<ApiKeyRecord | null> {
    return this.keys.findById(accountId, keyId);
  }

  /** Changes an active key; the next request with it (on any instance) sees the change. */
  async update(accountId: string, keyId: string, change: ApiKeyChange): Promise<ApiKeyRecord> {
    const updated = await this.keys.update(accountId, keyId, change, this.now());
    if (updated === null) throw new GatewayError('not_found', `No active API key with id '${keyId}'.`, { param: 'id' });
    return updated;
  }

  list(accountId: string): Promise<ApiKeyRecord[]> {
    return this.keys.listByAccount(accountId);
  }

  /**
   * The account's playground key (playground-key.ts), made on first use. Two first requests at once both insert;
   * the loser's insert fails on the id and it reads the winner's row.
   */
  async playgroundKey(accountId: string): Promise<ApiKeyRecord> {
    const id = playgroundKeyId(accountId);
    const existing = await this.keys.findById(accountId, id);
    if (existing !== null) return existing;
    try {
      return await this.keys.create(newPlaygroundKey(accountId, this.now()));
    } catch (error) {
      const winner = await this.keys.findById(accountId, id);
      if (winner === null) throw error;
      return winner;
    }
  }

  /** Revokes at once: authentication reads storage on every request, so no cache can serve the key afterwards. */
  async revoke(accountId: string, keyId: string): Promise<void> {
    refuseForPlaygroundKey(keyId, 'revoked');
    const revoked = await this.keys.revoke(accountId, keyId, this.now());
    if (!revoked) throw new GatewayError('not_found', `No active API key with id '${keyId}'.`, { param: 'id' });
  }

  /**
   * A new key with the same name and expiry; the old one revoked in the same transaction. The new one is made by
   * `rotatedBy` when given, else by whoever made the old one.
   */
  async rotate(accountId: string, keyId: string, rotatedBy?: string): Promise<CreatedApiKey> {
    refuseForPlaygroundKey(keyId, 'rotated');
    const existing = await this.keys.findById(accountId, keyId);
    if (existing === null || existing.revokedAt !== null) {
      throw new GatewayError('not_found', `No active API key with id '${keyId}'.`, { param: 'id' });
    }
    const { record, secret } = this.newKey(
      accountId,
      existing.name,
      existing.expiresAt,
      existing.permissions,
      rotatedBy ?? existing.createdBy,
    );
    const created = await this.keys.rotate(accountId, keyId, record, this.now());
    if (created === null) throw new GatewayError('not_found', `No active API key with id '${keyId}'.`, { param: 'id' });
    return { record: created, secret };
  }

  /**
   * The key and organisation behind a presented secret, or a 401 saying why not (missing, unknown, expired, revoked,
   * its organisation disabled, or its project archived).
   */
  async authenticate(presented: string | undefined): Promise<AuthenticatedKey> {
    if (presented === undefined || presented === '') {
      throw new GatewayError(
        'missing_api_key',
        'No API key provided. Send it as "Authorization: Bearer <API_KEY>" or in the "x-api-key" header.',
      );
    }
    if (!hasApiKeyShape(presented)) throw invalidKey();
    const hash = hashApiKey(presented);
    const found = await this.keys.findByHashWithOrganisation(hash);
    if (found === null || !digestsEqual(found.key.keyHash, hash)) throw invalidKey();
    const now = this.now();
    if (found.key.revokedAt !== null) throw new GatewayError('invalid_api_key', 'This API key has been revoked.');
    if (found.key.expiresAt !== null && found.key.expiresAt <= now) {
      throw new GatewayError(
        'expired_api_key',
        `This API key expired at ${new Date(found.key.expiresAt).toISOString()}.`,
      );
    }
    if (found.organisation.disabled) {
      throw new GatewayError('invalid_api_key', 'The organisation of this API key is disabled.');
    }
    // Archiving a project leaves its keys in place (the keys list still shows them) but stops them all at once.
    if (found.project.archivedAt !== null) {
      throw new GatewayError('invalid_api_key', 'The project of this API key is archived; its keys no longer work.');
    }
    this.noteUse(found.key.id, now);
    return found;
  }

  /**
   * The organisation's playground key as authentication gives a key (with its organisation and money), made on first
   * use. Looked up by its stored hash, which no presented key can produce; refused like any key of a disabled
   * organisation.
   */
  async authenticatePlayground(organisationId: string): Promise<AuthenticatedKey> {
    const key = await this.playgroundKey(organisationId);
    const found = await this.keys.findByHashWithOrganisation(key.keyHash);
    if (found === null) throw new GatewayError('invalid_api_key', 'The playground key could not be read.');
    if (found.organisation.disabled) {
      throw new GatewayError('invalid_api_key', 'This organisation is disabled.');
    }
    return found;
  }

  private noteUse(keyId: string, now: number): void {
    const last = this.lastUsedWrites.get(keyId);
    if (last !== undefined && now - last < LAST_USED_WRITE_INTERVAL_MS) return;
    this.lastUsedWrites.set(keyId, now);
    // Best effort and off the request's path: a lost last-used stamp costs nothing.
    this.keys.touchLastUsed(keyId, now).catch(() => this.lastUsedWrites.delete(keyId));
  }

  private newKey(
    organisationId: string,
    name: string,
    expiresAt: number | null,
    permissions: KeyPermissions,
    createdBy: string | null,
  ): { record: NewApiKey; secret: string } {
    const secret = generateApiKey();
    return {
      secret,
      record: {
        id: `key_${randomUUID().replaceAll('-', '')}`,
        accountId: organisationId,
        createdBy,
        name,
        keyHash: hashApiKey(secret),
        hint: apiKeyHint(secret),
        createdAt: this.now(),
        expiresAt,
        permissions,
      },
    };
  }
}

/** The playground key has no secret to leak or renew; its limits can still be edited like any key's. */
function refuseForPlaygroundKey(keyId: string, what: 'revoked' | 'rotated'): void {
  if (isPlaygroundKeyId(keyId))
    throw invalidRequest(
      `The playground key cannot be ${what}: it has no secret, and only the dashboard's playground uses it. Narrow its limits instead.`,
      'id',
    );
}

function invalidKey(): GatewayError {
  return new GatewayError('invalid_api_key', 'Incorrect API key provided. Create a key in the dashboard.');
}
