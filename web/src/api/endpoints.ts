import { exportRange, type ExportDays, type ExportFormat } from '../lib/export-days';
import type { UsageSpan } from '../lib/usage-query';
import { api, query } from './client';
import type {
  Account,
  AdminAccount,
  ApiKey,
  AuditEvent,
  AuditFilter,
  Billing,
  BillingDetails,
  CatalogSection,
  CatalogView,
  KeyLimitsInput,
  LedgerEntry,
  ModelInfo,
  Overview,
  Project,
  Standing,
  TierStatus,
  UpstreamCredential,
  UsageDaily,
  UsageFilter,
  UsageRequest,
} from './types';

/** Every dashboard API call by name, so pages never spell paths. */

export const auth = {
  register: (email: string, password: string) =>
    api<{ account: Account; csrfToken: string }>('POST', '/api/auth/register', { email, password }),
  login: (email: string, password: string) =>
    api<{ account: Account; csrfToken: string }>('POST', '/api/auth/login', { email, password }),
  logout: () => api<{ csrfToken: string }>('POST', '/api/auth/logout'),
  changePassword: (currentPassword: string, newPassword: string) =>
    api<{ csrfToken: string }>('POST', '/api/auth/password', { currentPassword, newPassword }),
};

export const overview = () => api<Overview>('GET', '/api/overview');

export const standing = () => api<Standing>('GET', '/api/standing');

export const models = () => api<{ models: ModelInfo[] }>('GET', '/api/models');

export const keys = {
  list: () => api<{ keys: ApiKey[] }>('GET', '/api/keys'),
  create: (name: string, expiresInDays?: number, limits: KeyLimitsInput = {}, projectId?: string) =>
    api<{ key: ApiKey; secret: string }>('POST', '/api/keys', {
      name,
      ...(expiresInDays === undefined ? {} : { expiresInDays }),
      ...(projectId === undefined ? {} : { projectId }),
      ...limits,
    }),
  update: (id: string, change: KeyLimitsInput & { name?: string }) =>
    api<{ key: ApiKey }>('PATCH', `/api/keys/${encodeURIComponent(id)}`, change),
  revoke: (id: string) => api<{ key: ApiKey }>('POST', `/api/keys/${encodeURIComponent(id)}/revoke`),
  rotate: (id: string) =>
    api<{ key: ApiKey; secret: string; revokedKeyId: string }>('POST', `/api/keys/${encodeURIComponent(id)}/rotate`),
};

export const projects = {
  list: (includeArchived = false) =>
    api<{ projects: Project[] }>('GET', `/api/projects${query({ archived: includeArchived ? 'true' : undefined })}`),
  create: (name: string, models: string[] | null) =>
    api<{ project: Project }>('POST', '/api/projects', { name, models }),
  update: (id: string, change: { name?: string; models?: string[] | null }) =>
    api<{ project: Project }>('PATCH', `/api/projects/${encodeURIComponent(id)}`, change),
  archive: (id: string) => api<{ project: Project }>('POST', `/api/projects/${encodeURIComponent(id)}/archive`),
};

/** The filter parameters of the usage calls. */
const filterParams = (filter: UsageFilter) => ({
  keyId: filter.keyId,
  model: filter.model,
  projectId: filter.projectId,
});

/** The range parameters of a span: `days`, or `from` and `to`. */
const spanParams = (span: UsageSpan) => ('days' in span ? { days: span.days } : { from: span.from, to: span.to });

export const usage = {
  daily: (span: UsageSpan, filter: UsageFilter = {}) =>
    api<UsageDaily>('GET', `/api/usage/daily${query({ ...spanParams(span), ...filterParams(filter) })}`),
  requests: (limit: number, cursor: string | null, filter: UsageFilter = {}) =>
    api<{ requests: UsageRequest[]; nextCursor: string | null }>(
      'GET',
      `/api/usage/requests${query({ limit, cursor, ...filterParams(filter) })}`,
    ),
  request: (id: string) => api<{ request: UsageRequest }>('GET', `/api/usage/requests/${encodeURIComponent(id)}`),
  exportUrl: (span: UsageSpan, filter: UsageFilter = {}) =>
    `/api/usage/export.csv${query({ ...spanParams(span), ...filterParams(filter) })}`,
  /** Every request of the days, as `GET /v1/usage/export` writes them (the page's filters apply). */
  recordsExportUrl: (days: ExportDays, format: ExportFormat, filter: UsageFilter = {}) =>
    `/api/usage/export${query({ ...exportRange(days), format, ...filterParams(filter) })}`,
};

export const billing = {
  get: () => api<Billing>('GET', '/api/billing'),
  ledger: (limit: number, cursor: string | null) =>
    api<{ entries: LedgerEntry[]; nextCursor: string | null }>('GET', `/api/billing/ledger${query({ limit, cursor })}`),
  redeem: (code: string) => api<{ creditedUsd: string; balanceUsd: string }>('POST', '/api/billing/redeem', { code }),
  checkout: (amountUsd: string) => api<{ url: string }>('POST', '/api/billing/checkout', { amountUsd }),
  ledgerExportUrl: (days: ExportDays, format: ExportFormat) =>
    `/api/billing/ledger/export${query({ ...exportRange(days), format })}`,
};

export const audit = {
  list: (filter: AuditFilter, limit: number, cursor: string | null) =>
    api<{ events: AuditEvent[]; nextCursor: string | null }>('GET', `/api/audit${query({ ...filter, limit, cursor })}`),
  exportUrl: (filter: AuditFilter, format: 'csv' | 'json') => `/api/audit/export${query({ ...filter, format })}`,
};

export const billingDetails = {
  get: () => api<BillingDetails>('GET', '/api/organisation/billing-details'),
  set: (details: BillingDetails) => api<BillingDetails>('PUT', '/api/organisation/billing-details', details),
};

/** A payment's printable receipt (opened in a new tab; the session cookie authenticates it). */
export const receiptUrl = (ledgerEntryId: string) => `/api/receipts/${encodeURIComponent(ledgerEntryId)}`;

export const tiers = {
  get: () => api<TierStatus>('GET', '/api/tiers'),
  buy: (tier: string) => api<TierStatus>('POST', '/api/tiers/buy', { tier }),
  setRenewal: (renews: boolean) => api<TierStatus>('POST', '/api/tiers/renewal', { renews }),
};

export const admin = {
  accounts: (search: string, limit: number, cursor: string | null) =>
    api<{ accounts: AdminAccount[]; nextCursor: string | null }>(
      'GET',
      `/api/admin/accounts${query({ query: search, limit, cursor })}`,
    ),
  credit: (id: string, amountUsd: string, note: string) =>
    api<{ balanceUsd: string }>('POST', `/api/admin/accounts/${encodeURIComponent(id)}/credit`, { amountUsd, note }),
  setTier: (id: string, tier: string) =>
    api<{ account: AdminAccount }>('POST', `/api/admin/accounts/${encodeURIComponent(id)}/tier`, { tier }),
  setDisabled: (id: string, disabled: boolean) =>
    api<{ account: AdminAccount }>('POST', `/api/admin/accounts/${encodeURIComponent(id)}/disabled`, { disabled }),
  createCodes: (amountUsd: string, count: number, expiresInDays?: number) =>
    api<{ codes: string[] }>(
      'POST',
      '/api/admin/codes',
      expiresInDays === undefined ? { amountUsd, count } : { amountUsd, count, expiresInDays },
    ),
  upstreams: () => api<{ credentials: UpstreamCredential[] }>('GET', '/api/admin/upstreams'),
  catalog: () => api<CatalogView>('GET', '/api/admin/catalog'),
  putCatalogEntry: (section: CatalogSection, id: string, entry: unknown) =>
    api<CatalogView>('PUT', `/api/admin/catalog/${section}/${encodeURIComponent(id)}`, entry),
  retireModel: (id: string, replacement: string | null) =>
    api<CatalogView>('POST', `/api/admin/catalog/models/${encodeURIComponent(id)}/retire`, { replacement }),
  deleteCatalogEntry: (section: CatalogSection, id: string) =>
    api<CatalogView>('DELETE', `/api/admin/catalog/${section}/${encodeURIComponent(id)}`),
};
