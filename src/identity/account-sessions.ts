import { createHash } from 'node:crypto';
import { hashToken, type SessionService } from '../accounts/session-service.js';
import type { IdentityRepository } from '../storage/identity-types.js';
import { IdentityError } from './identity-error.js';
import { userAgentLabel } from './user-agent-label.js';

/** One session as its owner sees it. */
export interface SessionView {
  /** Names the session in the API; not the cookie's token nor its stored hash. */
  id: string;
  device: string;
  userAgent: string | null;
  ip: string | null;
  createdAt: number;
  lastSeenAt: number;
  current: boolean;
}

/**
 * A person's own sessions: list them, end one, end all but the current one. Sessions are named by an id derived
 * from their stored hash under a label of its own, so what the list shows can neither log anyone in nor be
 * looked up in the sessions table directly.
 */
export class AccountSessions {
  constructor(
    private readonly identity: IdentityRepository,
    private readonly sessions: SessionService,
  ) {}

  async list(accountId: string, currentToken: string): Promise<SessionView[]> {
    const current = hashToken(currentToken);
    const rows = await this.identity.listSessions(accountId);
    return rows.map((row) => ({
      id: publicSessionId(row.idHash),
      device: userAgentLabel(row.userAgent),
      userAgent: row.userAgent,
      ip: row.ip,
      createdAt: row.createdAt,
      lastSeenAt: row.lastSeenAt,
      current: row.idHash === current,
    }));
  }

  /** Ends one of the account's sessions (the current one too: that is signing out). */
  async end(accountId: string, id: string): Promise<void> {
    const rows = await this.identity.listSessions(accountId);
    const row = rows.find((candidate) => publicSessionId(candidate.idHash) === id);
    if (row === undefined) throw new IdentityError(404, 'not_found', `No session with id '${id}'.`, 'id');
    await this.sessions.endByHash(row.idHash);
  }

  async endOthers(accountId: string, currentToken: string): Promise<number> {
    return this.sessions.endOthers(accountId, currentToken);
  }
}

function publicSessionId(idHash: string): string {
  return createHash('sha256').update(`tollgate-session-id\0${idHash}`, 'utf8').digest('hex').slice(0, 32);
}
