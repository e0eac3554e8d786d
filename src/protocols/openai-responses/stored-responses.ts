import { GatewayError, invalidRequest } from '../../canonical/errors.js';
import type { StoredResponseRepository } from '../../storage/stored-response-types.js';
import { presentItems, type ResponsesOutputItem } from './responses-encode-response.js';

const MS_PER_DAY = 86_400_000;
/**
 * Largest conversation (input items, JSON) a stored response may hold. The output is bounded by the model's output
 * limit; the input by this, checked before the request is served, so a stored chain cannot grow without end.
 */
export const MAX_STORED_INPUT_BYTES = 8 * 1024 * 1024;

export interface StoredResponsesOptions {
  repository: StoredResponseRepository;
  /** Days a stored response is kept (RESPONSES_RETENTION_DAYS); 0: forever. */
  retentionDays: number;
  now?: () => number;
}

export interface LoadedResponse {
  response: Record<string, unknown> & { output: ResponsesOutputItem[] };
  inputItems: Array<Record<string, unknown>>;
}

/**
 * The store of the Responses route: per account, bounded, expiring. Lookups of an id that is unknown, deleted,
 * expired or another account's all answer the same 404.
 */
export class StoredResponses {
  private readonly now: () => number;

  constructor(private readonly options: StoredResponsesOptions) {
    this.now = options.now ?? Date.now;
  }

  /** The conversation `previous_response_id` continues: its input items, then its output, or a 404 naming the field. */
  async conversation(accountId: string, id: string): Promise<Array<Record<string, unknown>>> {
    const loaded = await this.load(accountId, id);
    if (loaded === null) {
      throw new GatewayError('not_found', `Previous response with id '${id}' not found.`, {
        param: 'previous_response_id',
      });
    }
    return [...loaded.inputItems, ...loaded.response.output];
  }

  /**
   * `item_reference` input items replaced by the items they name. The gateway's output item ids carry their
   * response's id (`msg_<id>_<n>`), so a reference is found in that stored response of the same account; a reference
   * the store cannot resolve (not stored, expired, another account's, an id the gateway did not mint) is a 400 naming it.
   */
  async resolveItemReferences(accountId: string, input: unknown[]): Promise<unknown[]> {
    const loaded = new Map<string, LoadedResponse | null>();
    const resolved: unknown[] = [];
    for (const [index, item] of input.entries()) {
      const reference = itemReferenceId(item);
      if (reference === undefined) {
        resolved.push(item);
        continue;
      }
      const responseId = responseIdOfItem(reference);
      let response: LoadedResponse | null = null;
      if (responseId !== undefined) {
        if (!loaded.has(responseId)) loaded.set(responseId, await this.load(accountId, responseId));
        response = loaded.get(responseId) ?? null;
      }
      const found = response?.response.output.find((candidate) => candidate.id === reference);
      if (found === undefined) {
        throw invalidRequest(
          `'input[${index}]' refers to item '${reference}', which is not an item of a stored response of this account.`,
          `input[${index}].id`,
        );
      }
      resolved.push(found);
    }
    return resolved;
  }

  async load(accountId: string, id: string): Promise<LoadedResponse | null> {
    const record = await this.options.repository.get(accountId, id, this.notBefore());
    if (record === null) return null;
    return {
      response: JSON.parse(record.response) as LoadedResponse['response'],
      inputItems: JSON.parse(record.inputItems) as LoadedResponse['inputItems'],
    };
  }

  /** The serialised input items of a response about to be stored, or a 400 when they exceed the bound. */
  serialiseInput(items: ReadonlyArray<Record<string, unknown>>): string {
    const text = JSON.stringify(items);
    if (Buffer.byteLength(text) > MAX_STORED_INPUT_BYTES) {
      throw invalidRequest(
        `The conversation is too large to store (over ${MAX_STORED_INPUT_BYTES} bytes of input items): send it with 'store': false and the whole input instead of 'previous_response_id'.`,
        'input',
      );
    }
    return text;
  }

  async save(accountId: string, response: Record<string, unknown>, inputItems: string): Promise<void> {
    await this.options.repository.put({
      id: String(response.id),
      accountId,
      createdAt: this.now(),
      response: JSON.stringify(response),
      inputItems,
    });
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.options.repository.delete(accountId, id);
  }

  private notBefore(): number {
    return this.options.retentionDays <= 0 ? 0 : this.now() - this.options.retentionDays * MS_PER_DAY;
  }
}

function itemReferenceId(item: unknown): string | undefined {
  if (item === null || typeof item !== 'object') return undefined;
  const record = item as { type?: unknown; id?: unknown; role?: unknown };
  // `type` may be omitted on a reference (the SDK's `ResponseInputItem.ItemReference`), but then there is no role.
  const isReference =
    record.type === 'item_reference' ||
    (record.type === undefined && record.role === undefined && typeof record.id === 'string');
  return isReference && typeof record.id === 'string' ? record.id : undefined;
}

/** `msg_<hex>_<n>` (any item prefix) → `resp_<hex>`: the response whose output holds the item. */
export function responseIdOfItem(itemId: string): string | undefined {
  const match = /^[a-z]+_([0-9a-f]{8,64})_\d+$/.exec(itemId);
  return match === null ? undefined : `resp_${match[1]}`;
}

/** A stored response as `GET /v1/responses/{id}` shows it: reasoning blobs only when `include[]` asks. */
export function presentStoredResponse(
  response: LoadedResponse['response'],
  include: readonly string[],
): Record<string, unknown> {
  return { ...response, output: presentItems(response.output, include.includes('reasoning.encrypted_content')) };
}

export interface InputItemsPage {
  object: 'list';
  data: Array<Record<string, unknown>>;
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** `GET /v1/responses/{id}/input_items`: cursor `after` (an item id), `limit` 1-100 (default 20), `order` (default desc). */
export function pageInputItems(
  items: ReadonlyArray<Record<string, unknown>>,
  query: { after?: string; limit?: number; order?: 'asc' | 'desc' },
): InputItemsPage {
  const ordered = query.order === 'asc' ? [...items] : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const index = ordered.findIndex((item) => item.id === query.after);
    if (index < 0)
      throw invalidRequest(`'after' names no input item of this response: ${JSON.stringify(query.after)}.`, 'after');
    start = index + 1;
  }
  const limit = query.limit ?? 20;
  const data = ordered
    .slice(start, start + limit)
    .map((item) => (item.type === 'reasoning' ? withoutBlob(item) : item));
  return {
    object: 'list',
    data,
    first_id: (data[0]?.id as string | undefined) ?? null,
    last_id: (data[data.length - 1]?.id as string | undefined) ?? null,
    has_more: start + limit < ordered.length,
  };
}

function withoutBlob(item: Record<string, unknown>): Record<string, unknown> {
  const { encrypted_content: _blob, ...rest } = item;
  return rest;
}
