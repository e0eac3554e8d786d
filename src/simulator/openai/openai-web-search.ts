/**
 * OpenAI's Chat Completions web search, emulated: `web_search_options` is taken only by the search models
 * (`gpt-5-search-api`, the older `*-search-preview`), which refuse sampling settings, function tools, several choices
 * and log probabilities, as OpenAI does. A searched reply cites two pages as `url_citation` annotations over its first
 * sentence.
 */
import { hashHex } from '../reply-engine.js';
import { fail, invalidType, invalidValue, isObject, requireObject, type Json } from './openai-validate-primitives.js';

const SEARCH_MODEL = /-search-(api|preview)(-|$)/;

/** Fields a search model refuses, in the order OpenAI lists them. */
const SEARCH_MODEL_REFUSED = [
  'frequency_penalty',
  'logprobs',
  'n',
  'presence_penalty',
  'temperature',
  'tools',
  'top_p',
] as const;

export function checkWebSearch(body: Json, model: string): void {
  const options = body['web_search_options'];
  if (!SEARCH_MODEL.test(model)) {
    if (options !== undefined && options !== null)
      fail(`Unknown parameter: 'web_search_options'.`, 'web_search_options', 'unknown_parameter');
    return;
  }
  if (options !== undefined && options !== null) checkOptions(options);
  const refused = SEARCH_MODEL_REFUSED.filter((field) => body[field] !== undefined && body[field] !== null);
  if (refused.length > 0) {
    const noun = refused.length === 1 ? 'argument' : 'arguments';
    fail(`Model incompatible request ${noun} supplied: ${refused.join(', ')}`, null, null);
  }
}

const CONTEXT_SIZES = ['low', 'medium', 'high'];
const LOCATION_FIELDS = ['city', 'country', 'region', 'timezone'];

function checkOptions(options: unknown): void {
  if (!isObject(options)) invalidType('web_search_options', 'an object', options);
  const size = options['search_context_size'];
  if (size !== undefined && size !== null && !CONTEXT_SIZES.includes(size as string))
    invalidValue('web_search_options.search_context_size', size, CONTEXT_SIZES);
  const location = options['user_location'];
  if (location === undefined || location === null) return;
  const param = 'web_search_options.user_location';
  if (!isObject(location)) invalidType(param, 'an object', location);
  if (location['type'] !== 'approximate') invalidValue(`${param}.type`, location['type'], ['approximate']);
  const approximate = requireObject(location, 'approximate', `${param}.approximate`);
  for (const [field, value] of Object.entries(approximate)) {
    if (!LOCATION_FIELDS.includes(field))
      fail(`Unknown parameter: '${param}.approximate.${field}'.`, `${param}.approximate.${field}`, 'unknown_parameter');
    if (typeof value !== 'string') invalidType(`${param}.approximate.${field}`, 'a string', value);
  }
}

/** The annotations of a searched reply: two pages, each supporting the first sentence of `content`. */
export function urlCitations(lastUserText: string, content: string): object[] {
  const seed = hashHex(`web-search:${lastUserText}`, 12);
  const sentence = content.split(/(?<=[.!?])\s/)[0] ?? content;
  if (sentence === '') return [];
  return [1, 2].map((rank) => ({
    type: 'url_citation',
    url_citation: {
      url: `https://search.example/${seed}/${rank}`,
      title: `source${rank}.example`,
      start_index: 0,
      end_index: sentence.length,
    },
  }));
}
