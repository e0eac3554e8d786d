import { formatUsd } from '../../billing/money.js';
import type { UsageRecord } from '../../storage/types.js';

/**
 * One settled request as the usage export carries it (docs/usage-export.md#event-fields): the sinks' events and
 * the rows of `GET /v1/usage/export` alike. Money is both a USD decimal and exact integer nano-USD as a string.
 */
export interface UsageEvent {
  /** The gateway's request id: unique, so the idempotency key of an at-least-once delivery. */
  request_id: string;
  object: 'usage_event';
  created_at: string;
  created_at_ms: number;
  /** The organisation the request was billed to (the usage record's account). */
  organisation_id: string;
  api_key_id: string;
  model: string;
  family: string;
  /** The client route the request came in on; null for records settled before the gateway kept it. */
  route: string | null;
  stream: boolean;
  /** `ok`, `client_disconnected`, `upstream_error`, … */
  status: string;
  input_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  free_tokens: number;
  unbilled_tokens: number;
  web_search_requests: number;
  web_fetch_requests: number;
  cost_usd: string;
  cost_nano_usd: string;
  unbilled_cost_usd: string;
  unbilled_cost_nano_usd: string;
  server_tool_cost_nano_usd: string;
  latency_ms: number;
}

export function usageEvent(record: UsageRecord): UsageEvent {
  return {
    request_id: record.requestId,
    object: 'usage_event',
    created_at: new Date(record.createdAt).toISOString(),
    created_at_ms: record.createdAt,
    organisation_id: record.accountId,
    api_key_id: record.apiKeyId,
    model: record.model,
    family: record.family,
    route: record.route ?? null,
    stream: record.stream,
    status: record.status,
    input_tokens: record.inputTokens,
    cache_read_tokens: record.cacheReadTokens,
    cache_write_tokens: record.cacheWriteTokens,
    cache_write_1h_tokens: record.cacheWrite1hTokens,
    output_tokens: record.outputTokens,
    reasoning_tokens: record.reasoningTokens,
    free_tokens: record.freeTokens,
    unbilled_tokens: record.unbilledTokens ?? 0,
    web_search_requests: record.webSearchRequests ?? 0,
    web_fetch_requests: record.webFetchRequests ?? 0,
    cost_usd: formatUsd(record.costNano),
    cost_nano_usd: record.costNano.toString(),
    unbilled_cost_usd: formatUsd(record.unbilledNano),
    unbilled_cost_nano_usd: record.unbilledNano.toString(),
    server_tool_cost_nano_usd: (record.serverToolNano ?? 0n).toString(),
    latency_ms: record.latencyMs,
  };
}

/** The event's fields in their CSV column order (every field but `object`). */
export const USAGE_EVENT_COLUMNS = [
  'request_id',
  'created_at',
  'created_at_ms',
  'organisation_id',
  'api_key_id',
  'model',
  'family',
  'route',
  'stream',
  'status',
  'input_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'cache_write_1h_tokens',
  'output_tokens',
  'reasoning_tokens',
  'free_tokens',
  'unbilled_tokens',
  'web_search_requests',
  'web_fetch_requests',
  'cost_usd',
  'cost_nano_usd',
  'unbilled_cost_usd',
  'unbilled_cost_nano_usd',
  'server_tool_cost_nano_usd',
  'latency_ms',
] as const satisfies readonly (keyof UsageEvent)[];

/** The event's CSV fields, in `USAGE_EVENT_COLUMNS` order (a null route is an empty field). */
export function usageEventFields(event: UsageEvent): (string | number | boolean)[] {
  return USAGE_EVENT_COLUMNS.map((column) => event[column] ?? '');
}
