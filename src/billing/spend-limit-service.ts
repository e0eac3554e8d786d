import { GatewayError, invalidRequest } from '../canonical/errors.js';
import type { SpendPeriod } from '../storage/key-permission-types.js';
import type { ProjectRepository } from '../storage/project-types.js';
import {
  isLimitScope,
  LIMIT_SCOPES,
  periodsOf,
  type LimitScope,
  type SpendLimitRecord,
  type SpendLimitRepository,
  type SpendLimitSelector,
} from '../storage/spend-limit-types.js';
import type { ApiKeyRepository } from '../storage/types.js';

/** What a caller names a limit by, as it came (checked here). */
export interface LimitTarget {
  scope: string;
  /** The organisation's, project's or key's id. */
  scopeId: string;
  period: string;
}

/**
 * Setting, clearing and listing the spend limits of an organisation, its projects and its keys
 * (docs/billing.md#spend-limits), for the dashboard API and the CLI. Every bad name is a 400 naming its field (an
 * unknown key or project of the organisation a 404), before anything is written.
 */
export class SpendLimitService {
  constructor(
    private readonly limits: SpendLimitRepository,
    private readonly keys: Pick<ApiKeyRepository, 'findById'>,
    private readonly projects: Pick<ProjectRepository, 'get'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Every limit of the organisation, or of one scope (and id), with what each has used and holds now. */
  async list(organisationId: string, filter: { scope?: string; scopeId?: string } = {}): Promise<SpendLimitRecord[]> {
    if (filter.scope !== undefined) parseScope(filter.scope);
    return this.limits.list(organisationId, this.now(), {
      ...(filter.scope === undefined ? {} : { scope: filter.scope as LimitScope }),
      ...(filter.scopeId === undefined ? {} : { scopeId: filter.scopeId }),
    });
  }

  /** Sets one limit (a new amount keeps the period's spend and holds); the limit before (or null) and after. */
  async set(
    organisationId: string,
    target: LimitTarget,
    limitNano: bigint,
  ): Promise<{ before: SpendLimitRecord | null; after: SpendLimitRecord }> {
    if (limitNano < 0n) throw invalidRequest("Invalid value for 'usd': a limit is not below zero.", 'usd');
    const selector = await this.selector(organisationId, target);
    return this.limits.set({ ...selector, limitNano, at: this.now() });
  }

  /** Clears one limit; the 404 when it has none. */
  async clear(organisationId: string, target: LimitTarget): Promise<SpendLimitRecord> {
    const selector = await this.selector(organisationId, target);
    const cleared = await this.limits.clear(selector, this.now());
    if (cleared === null)
      throw new GatewayError('not_found', `No ${selector.period} spend limit is set on this ${selector.scope}.`, {
        param: 'period',
      });
    return cleared;
  }

  /** The limit the target names, once its scope, period and owner are known to be the organisation's. */
  private async selector(organisationId: string, target: LimitTarget): Promise<SpendLimitSelector> {
    const scope = parseScope(target.scope);
    const periods = periodsOf(scope);
    if (!(periods as readonly string[]).includes(target.period))
      throw invalidRequest(
        `Invalid value for 'period': '${target.period}'. A ${scope} limit's periods: ${periods.join(', ')}.`,
        'period',
      );
    if (scope === 'organisation' && target.scopeId !== organisationId)
      throw new GatewayError('not_found', `No organisation '${target.scopeId}' here.`, { param: 'scope_id' });
    if (scope === 'key' && (await this.keys.findById(organisationId, target.scopeId))?.revokedAt !== null)
      throw new GatewayError('not_found', `No active API key with id '${target.scopeId}'.`, { param: 'scope_id' });
    if (scope === 'project' && (await this.projects.get(organisationId, target.scopeId)) === null)
      throw new GatewayError('not_found', `No project with id '${target.scopeId}'.`, { param: 'scope_id' });
    return { organisationId, scope, scopeId: target.scopeId, period: target.period as SpendPeriod };
  }
}

function parseScope(scope: string): LimitScope {
  if (!isLimitScope(scope))
    throw invalidRequest(`Invalid value for 'scope': '${scope}'. Valid scopes: ${LIMIT_SCOPES.join(', ')}.`, 'scope');
  return scope;
}
