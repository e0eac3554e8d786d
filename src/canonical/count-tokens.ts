import { createRequire } from 'node:module';
import { responseChoices, type CanonicalResponse } from './accumulate.js';
import type { CanonicalRequest, ContentBlock } from './request.js';
import { forEachBoundedPiece, LONG_RUN } from './bounded-pretokens.js';
import { BudgetedTokenCounter } from './budgeted-token-counter.js';

type O200kTokenizer = typeof import('gpt-tokenizer/encoding/o200k_base');

/**
 * Token estimates with a real tokenizer (o200k, bundled with gpt-tokenizer, works offline). Used where a vendor
 * gives no count: admission estimates (when the UTF-8 upper bound below does not settle admission) and replies
 * cut off before the vendor's usage arrived. Counts of other vendors' tokenizers differ somewhat; these are
 * estimates, the vendor's own usage wins whenever it exists.
 */

/** OpenAI's per-message framing overhead, the same rule the simulator counts with. */
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_REPLY = 3;
/**
 * A flat estimate for an image; vendors charge by size, which the gateway does not decode. It is the most any
 * vendor counts for one image (Anthropic scales images to ≤ 1.15 megapixels, about 1,600 tokens; OpenAI's high
 * detail is 765 for a 1024² image, Gemini 258), so the hold's free tokens cover the vendor's count and a request
 * within the day's allowance stays free whichever vendor serves it.
 */
const TOKENS_PER_IMAGE = 1_600;
/** A flat estimate for a document (a few pages); the vendor's count replaces it once the reply arrives. */
const TOKENS_PER_DOCUMENT = 1_500;

/** Special-token spellings (`<|endoftext|>`) in client text are plain text; by default the tokenizer throws on them. */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * The tokenizer's tables cost ~50 MB of RSS, so they are loaded on the first count, not at start-up: a gateway
 * that has needed no count yet does not carry them (admission of accounts whose balance covers the upper bound
 * needs none, nor do replies whose vendor reports usage). `loadTokenizer` loads the ESM build asynchronously
 * (the one the demo simulator shares, so demo mode holds a single copy); the request path awaits it before its
 * first count. A count needed before that, from code that cannot wait, loads the package's CommonJS build
 * synchronously instead: same code, same tables, same counts.
 */
let countTokens: O200kTokenizer['countTokens'] | undefined;
let loading: Promise<void> | undefined;

/** Whether counts are ready without loading anything (a cheap check for the request path). */
export function tokenizerLoaded(): boolean {
  return countTokens !== undefined;
}

/**
 * Loads the tokenizer (once); every count after it resolves is synchronous and loads nothing. Already loaded
 * (asynchronously, or by the synchronous fallback below), it imports nothing more: callers just await it.
 */
export function loadTokenizer(): Promise<void> {
  loading ??=
    countTokens !== undefined
      ? Promise.resolve()
      : import('gpt-tokenizer/encoding/o200k_base').then((tokenizer) => {
          countTokens ??= tokenizer.countTokens;
        });
  return loading;
}

function tokenizer(): O200kTokenizer['countTokens'] {
  if (countTokens === undefined) {
    const require = createRequire(import.meta.url);
    countTokens = (require('gpt-tokenizer/encoding/o200k_base') as O200kTokenizer).countTokens;
  }
  return countTokens;
}

const count = (text: string) => tokenizer()(text, PLAIN_TEXT);

/** Tokens of `text`, long runs counted in slices (see bounded-pretokens.ts): linear in the text's length. */
export function countTextTokens(text: string): number {
  if (text === '') return 0;
  if (text.length <= LONG_RUN) return count(text);
  let total = 0;
  forEachBoundedPiece(text, (piece) => {
    total += count(piece);
  });
  return total;
}

/**
 * Characters of one request's text counted exactly. Tokenizing costs about 1 to 4 µs per character on the
 * event loop (dense text such as base64 is the slowest), so a body-sized prompt would stall every other request
 * for seconds; it runs for every authenticated request, before admission. Beyond this budget the rest is
 * extrapolated from what was counted: a request estimate, replaced by the vendor's own count when it reports one.
 */
export const EXACT_CHARS_PER_REQUEST = 100_000;
/**
 * A counter for one request's texts with the request budget (see BudgetedTokenCounter). With `countTextTokens` it
 * is the estimate; with `utf8UpperBound` it bounds that estimate from above, text by text: the exact part because
 * each text's bound is at least its count, the extrapolated part because the ratio it extrapolates with (bound per
 * character) is then at least the estimate's ratio (tokens per character).
 */
function requestCounter(measure: (text: string) => number): BudgetedTokenCounter {
  return new BudgetedTokenCounter(measure, EXACT_CHARS_PER_REQUEST);
}

/**
 * At least `countTextTokens(text)`, without the tokenizer: every o200k token stands for at least one UTF-8 byte
 * of the text. `Buffer.byteLength` counts a lone surrogate as the 3 bytes of U+FFFD, as the tokenizer's encoder
 * does; but a long run is counted in slices of LONG_RUN UTF-16 units, and a cut through a surrogate pair turns
 * its 4 bytes into two lone surrogates of 3 bytes each: 2 more bytes per cut, hence the second term.
 */
export function utf8UpperBound(text: string): number {
  const bytes = Buffer.byteLength(text, 'utf8');
  return text.length < LONG_RUN ? bytes : bytes + 2 * Math.floor(text.length / LONG_RUN);
}

/**
 * A text counter for one prompt with the request budget: exact for its first EXACT_CHARS_PER_REQUEST characters,
 * extrapolated beyond (the simulator counts a prompt by the same rule, so the two agree on any size). Counting a
 * body-sized prompt exactly would hold the event loop for seconds.
 */
export function budgetedTextCounter(): (text: string) => number {
  const counter = requestCounter(countTextTokens);
  return (text) => counter.count(text);
}

/** The tokenizer's estimate of a request's input tokens (framing, flats for images and documents included). */
export function estimateRequestInputTokens(request: CanonicalRequest): number {
  return walkRequest(request, requestCounter(countTextTokens));
}

/**
 * An upper bound on `estimateRequestInputTokens(request)` that never loads or runs the tokenizer (about 50 MB
 * and the larger part of a request's admission CPU): the same walk over the request, with the same framing and
 * flats, each text measured by its UTF-8 length. For ASCII prose it is about 4 times the count.
 */
export function upperBoundRequestInputTokens(request: CanonicalRequest): number {
  return walkRequest(request, requestCounter(utf8UpperBound));
}

/** What the estimate and its upper bound both add up: they differ only in how a text is measured. */
function walkRequest(request: CanonicalRequest, counter: BudgetedTokenCounter): number {
  const count = (text: string) => counter.count(text);
  let total = TOKENS_PER_REPLY;
  if (request.system.length > 0) {
    total += TOKENS_PER_MESSAGE + request.system.reduce((sum, block) => sum + count(block.text), 0);
  }
  for (const message of request.messages) {
    total += TOKENS_PER_MESSAGE;
    for (const block of message.content) total += blockTokens(block, count);
  }
  for (const tool of request.tools ?? []) {
    total += count(tool.name) + count(tool.description ?? '') + count(JSON.stringify(tool.parameters ?? {}));
  }
  return total;
}

/** Output tokens of what a (possibly partial) reply delivered. */
export function estimateResponseOutputTokens(response: CanonicalResponse): number {
  let total = 0;
  for (const choice of responseChoices(response))
    for (const block of choice.content) {
      if (block.type === 'tool-call') total += countTextTokens(block.name) + countTextTokens(block.argumentsJson);
      else if (block.type === 'server-tool-call') total += countTextTokens(JSON.stringify(block.input ?? {}));
      else if (block.type !== 'server-tool-result') total += countTextTokens(block.text);
    }
  return total;
}

function blockTokens(block: ContentBlock, count: (text: string) => number): number {
  switch (block.type) {
    case 'text':
    case 'reasoning':
      return count(block.text);
    case 'image':
      return TOKENS_PER_IMAGE;
    case 'document':
      return TOKENS_PER_DOCUMENT;
    case 'tool-call':
      return count(block.name) + count(block.argumentsJson);
    case 'tool-result':
      return block.content.reduce((sum, part) => sum + blockTokens(part, count), 0);
    case 'server-tool-call':
      return count(block.name) + count(JSON.stringify(block.input ?? {}));
    case 'server-tool-result':
      // The vendor's own payload (search results with their page text, encrypted) is what the model reads.
      return count(JSON.stringify(block.anthropicBlock ?? block.searchResults ?? ''));
  }
}
