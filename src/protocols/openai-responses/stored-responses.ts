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
      throw new GatewayError('not_found', `Previous response with id '${id}' not found.`, { param: 'previous_response_id' });
    }
    return [...loaded.inputItems, ...loaded.response.output];
  }

  async load(accountId: string, id: string): Promise<LoadedResponse | null> {
    const record = await this.options.repository.get(accountId, id, this.notBefore());
    if (record === null) return null;
    return { response: JSON.parse(record.response) as LoadedResponse['response'], inputItems: JSON.parse(record.inputItems) as LoadedResponse['inputItems'] };
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
    await this.options.repository.put({ id: String(response.id), accountId, createdAt: this.now(), response: JSON.stringify(response), inputItems });
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.options.repository.delete(accountId, id);
  }

  private notBefore(): number {
    return this.options.retentionDays <= 0 ? 0 : this.now() - this.options.retentionDays * MS_PER_DAY;
  }
}

/** A stored response as `GET /v1/responses/{id}` shows it: reasoning blobs only when `include[]` asks. */
export function presentStoredResponse(response: LoadedResponse['response'], include: readonly string[]): Record<string, unknown> {
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
export function pageInputItems(items: ReadonlyArray<Record<string, unknown>>, query: { after?: string; limit?: number; order?: 'asc' | 'desc' }): InputItemsPage {
  const ordered = query.order === 'asc' ? [...items] : [...items].reverse();
  let start = 0;
  if (query.after !== undefined) {
    const index = ordered.findIndex((item) => item.id === query.after);
    if (index < 0) throw invalidRequest(`'after' names no input item of this response: ${JSON.stringify(query.after)}.`, 'after');
    start = index + 1;
  }
  const limit = query.limit ?? 20;
  const data = ordered.slice(start, start + limit).map((item) => (item.type === 'reasoning' ? withoutBlob(item) : item));
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
