/**
 * Vendor-neutral reply generation for the simulator: deterministic text from the prompt, token counts with
 * the real o200k tokenizer, stop sequences, the output-token cap, and the split into stream pieces along
 * token boundaries. Every vendor module builds its wire format around the `Reply` this returns, so the
 * same prompt gets the same text from every vendor, streamed or not.
 */
import { createHash } from 'node:crypto';
import { decodeGenerator, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { forEachBoundedPiece } from '../canonical/bounded-pretokens.js';
import { BudgetedTokenCounter } from '../canonical/budgeted-token-counter.js';

/** Why generation ended, before a vendor names it (`stop`/`end_turn`/`STOP`, `length`/`max_tokens`/...). */
export type ReplyEnd = 'end' | 'stop-sequence' | 'length';

export interface ReplyRequest {
  /** Everything the reply is derived from (e.g. the serialised messages): same seed text, same reply. */
  seedText: string;
  /** Text of the last user message; its first words are echoed at the start of the reply. */
  lastUserText: string;
  /** Words generated after the echo sentence; by default 12 to 40, chosen by the seed. */
  words?: number;
  /** Output-token cap: the reply is cut after exactly this many tokens. */
  maxTokens?: number;
  stopSequences?: readonly string[];
  /** Distinguishes several choices of one request (OpenAI `n`). */
  variant?: number;
  /** Replaces the echo sentence as the reply's first sentence (e.g. a quote of tool results). */
  opening?: string;
}

/** The cuts applied to a generated text: output-token cap and stop sequences. */
export interface ReplyLimits {
  maxTokens?: number;
  stopSequences?: readonly string[];
}

export interface Reply {
  text: string;
  /** Stream pieces of about one token each; joined they give `text` exactly. */
  pieces: string[];
  /** Output tokens generated: the token count of `text` (the cap itself when cut by it). */
  completionTokens: number;
  end: ReplyEnd;
  /** The stop sequence that ended the reply, when `end` is 'stop-sequence'. */
  stopSequence?: string;
}

// Plain English words that are single o200k tokens with their leading space, so filler costs ~1 token/word.
const FILLER_WORDS = [
  'the',
  'river',
  'light',
  'quiet',
  'morning',
  'stone',
  'garden',
  'window',
  'simple',
  'answer',
  'with',
  'over',
  'under',
  'after',
  'before',
  'small',
  'bright',
  'road',
  'city',
  'green',
  'water',
  'paper',
  'music',
  'story',
  'north',
  'south',
  'table',
  'open',
  'field',
  'clear',
  'warm',
  'cold',
  'house',
  'line',
  'time',
  'world',
  'sound',
  'old',
  'new',
  'long',
  'short',
  'high',
  'low',
  'near',
  'far',
  'blue',
  'red',
  'hill',
  'cloud',
  'tree',
  'bird',
  'song',
  'path',
  'lake',
  'hand',
  'word',
  'page',
  'book',
  'door',
  'wall',
] as const;

const ECHO_WORDS = 8;
const WHITESPACE = /\s+/;

/**
 * Text encoding that treats `<|endoftext|>` and other special-token spellings in user text as plain text
 * (the tokenizer would otherwise throw on them).
 */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Characters of one prompt counted exactly; the rest is extrapolated from the ratio counted so far. The o200k
 * encoder costs about 1 to 4 µs per character, and in demo mode the simulator runs on the gateway's event loop:
 * a 7.5 MB prompt blocked it for over a second. Like a vendor's, the count stays deterministic: the same prompt
 * is always the same number, in usage and in count-tokens answers alike. The gateway's own count of an OpenAI-format
 * prompt (count_tokens) uses the same budget and counter (EXACT_CHARS_PER_REQUEST, BudgetedTokenCounter), so the
 * two agree at any size.
 */
export const EXACT_PROMPT_CHARS = 100_000;

/** The counter of the prompt being counted (see `countPromptWithin`); counting is synchronous, so one at a time. */
let promptCounter: BudgetedTokenCounter | undefined;

/**
 * Runs a prompt's count (every `countTokens` it makes) under one budget of EXACT_PROMPT_CHARS characters, so a
 * prompt of many large texts costs no more than one. Outside it, each `countTokens` call has a budget of its own.
 */
export function countPromptWithin<T>(count: () => T): T {
  const outer = promptCounter;
  promptCounter = new BudgetedTokenCounter(countExactly, EXACT_PROMPT_CHARS);
  try {
    return count();
  } finally {
    promptCounter = outer;
  }
}

/** Tokens of `text` in the o200k encoding (GPT-4o, GPT-5, o-series), exact up to the prompt's budget. */
export function countTokens(text: string): number {
  return (promptCounter ?? new BudgetedTokenCounter(countExactly, EXACT_PROMPT_CHARS)).count(text);
}

/** BPE is quadratic in a pre-token's length: long runs (of spaces too) are counted in slices, as the gateway does. */
function countExactly(text: string): number {
  let total = 0;
  forEachBoundedPiece(text, (piece) => {
    total += encode(piece, PLAIN_TEXT).length;
  });
  return total;
}

/** First 32 bits of the SHA-256 of `text`: the seed of the reply's pseudo-random choices. */
export function hashSeed(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0);
}

/** Short hex digest, for deterministic ids. */
export function hashHex(text: string, length = 24): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

/** mulberry32: a tiny, well-mixed 32-bit PRNG; enough for choosing filler words reproducibly. */
function pseudoRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** Longest word quoted whole; a "word" can be a 100 kB run, and quoted whole it would make the reply huge. */
const QUOTED_WORD_CHARS = 64;

/**
 * The first `count` words of `text`, each cut to `maxWordChars` characters (with `…`), and whether more
 * follow. Reads only the head of the text that can hold them: a prompt can be megabytes of one character.
 */
export function leadingWords(
  text: string,
  count: number,
  maxWordChars = QUOTED_WORD_CHARS,
): { words: string[]; more: boolean } {
  // Each word needs at most maxWordChars + 1 characters to be known as cut; four times that per word leaves
  // room for the whitespace between them (only text with huge gaps between its first words quotes fewer).
  const headChars = (count + 1) * (maxWordChars + 1) * 4;
  const head = text.length > headChars ? text.slice(0, headChars) : text;
  const all = head.split(WHITESPACE).filter((word) => word.length > 0);
  const words = all
    .slice(0, count)
    .map((word) => (word.length > maxWordChars ? `${word.slice(0, maxWordChars)}…` : word));
  // Past the head, more words are assumed when the head was already full of them.
  return { words, more: all.length > count || (head.length < text.length && all.length === count) };
}

function echoSentence(lastUserText: string): string {
  const { words, more } = leadingWords(lastUserText, ECHO_WORDS);
  if (words.length === 0) return 'Hello.';
  return `You said: "${words.join(' ')}${more ? ' ...' : ''}".`;
}

/** Filler sentences of 5 to 12 words, capitalised, each ending with a period. */
function fillerText(random: () => number, count: number): string {
  const out: string[] = [];
  let sentenceLeft = 0;
  for (let i = 0; i < count; i++) {
    let word = FILLER_WORDS[Math.floor(random() * FILLER_WORDS.length)] ?? 'the';
    if (sentenceLeft === 0) {
      sentenceLeft = 5 + Math.floor(random() * 8);
      word = word.charAt(0).toUpperCase() + word.slice(1);
    }
    sentenceLeft--;
    out.push(sentenceLeft === 0 || i === count - 1 ? `${word}.` : word);
  }
  return out.join(' ');
}

/** The full reply before stop sequences and the token cap apply. */
export function generateText(request: ReplyRequest): string {
  const random = pseudoRandom(hashSeed(`${request.variant ?? 0}\n${request.seedText}`));
  const words = request.words ?? 12 + Math.floor(random() * 29);
  const opening = request.opening ?? echoSentence(request.lastUserText);
  return words === 0 ? opening : `${opening} ${fillerText(random, words)}`;
}

interface TokenPieces {
  pieces: string[];
  /** Token count consumed once pieces[i] is complete (a character split over tokens is one piece). */
  tokenEnds: number[];
}

function splitIntoTokenPieces(text: string): TokenPieces {
  const tokens = text.length === 0 ? [] : encode(text, PLAIN_TEXT);
  const pieces: string[] = [];
  const tokenEnds: number[] = [];
  let consumed = 0;
  function* counted(): Generator<number> {
    for (const token of tokens) {
      consumed++;
      yield token;
    }
  }
  // decodeGenerator holds back a token that ends inside a UTF-8 character until the character is complete,
  // so every piece is valid text; it pulls tokens lazily, so `consumed` marks where each piece ends.
  for (const piece of decodeGenerator(counted())) {
    pieces.push(piece);
    tokenEnds.push(consumed);
  }
  return { pieces, tokenEnds };
}

/** Builds the reply: generated text, cut at the first stop sequence, then at `maxTokens` tokens. */
export function buildReply(request: ReplyRequest): Reply {
  return limitText(generateText(request), request);
}

/** Filler sentences only (no opening), e.g. for reasoning text; deterministic from `seedText`. */
export function fillerWords(seedText: string, words: number): string {
  return words === 0 ? '' : fillerText(pseudoRandom(hashSeed(seedText)), words);
}

/** Any text as a reply: cut at the first stop sequence, then at `maxTokens` tokens, split into pieces. */
export function limitText(fullText: string, limits: ReplyLimits): Reply {
  let text = fullText;
  let end: ReplyEnd = 'end';
  let stopSequence: string | undefined;
  let stopAt = text.length;
  for (const candidate of limits.stopSequences ?? []) {
    const index = candidate.length === 0 ? -1 : text.indexOf(candidate);
    if (index !== -1 && index < stopAt) {
      stopAt = index;
      stopSequence = candidate;
    }
  }
  if (stopSequence !== undefined) {
    text = text.slice(0, stopAt);
    end = 'stop-sequence';
  }
  const { pieces, tokenEnds } = splitIntoTokenPieces(text);
  const tokenCount = tokenEnds.at(-1) ?? 0;
  const cap = limits.maxTokens;
  if (cap === undefined || tokenCount <= cap) {
    return { text, pieces, completionTokens: tokenCount, end, ...(stopSequence === undefined ? {} : { stopSequence }) };
  }
  // The cap wins over a later stop sequence. A character straddling the cap is left out, as the vendors
  // never emit half a character; the cap is still what was generated.
  let kept = 0;
  while (kept < pieces.length && (tokenEnds[kept] ?? Infinity) <= cap) kept++;
  const keptPieces = pieces.slice(0, kept);
  return { text: keptPieces.join(''), pieces: keptPieces, completionTokens: cap, end: 'length' };
}
