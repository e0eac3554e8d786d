import { describe, expect, it } from 'vitest';
import { openAIChatRequestSchema } from './openai-chat-schema.js';
import { decodeOpenAIChatRequest } from './openai-decode-request.js';
import { isPlainOpenAIChatBody } from './plain-chat-body.js';

const user = (content: string) => ({ role: 'user', content });

/** Bodies the decoder may take as they are: the schema must accept each and give back an equal value. */
const PLAIN: object[] = [
  { model: 'beta-5.4', messages: [user('Hello')] },
  { messages: [user('no model: the pipeline words that error')] },
  { model: 42, messages: [user('a model of any type passes the schema')] },
  {
    model: 'm',
    messages: [
      { role: 'system', content: 'Be brief.' },
      { content: 'Hi', role: 'user' },
      { role: 'assistant', content: '' },
      { role: 'developer', content: 'x' },
    ],
  },
  {
    model: 'm',
    messages: [user('s')],
    stream: true,
    stream_options: { include_usage: true, include_obfuscation: false },
  },
  {
    model: 'm',
    messages: [user('s')],
    stream: false,
    stream_options: null,
    max_tokens: 1,
    max_completion_tokens: null,
    temperature: 2,
    top_p: 0,
  },
  { model: 'm', messages: [user('s')], stream: null, max_tokens: 9007199254740991, temperature: 0.7, top_p: 1 },
];

/** Bodies the decoder must hand to the schema (valid or not): a field, role or value the plain check does not cover. */
const NOT_PLAIN: object[] = [
  { model: 'm', messages: [] },
  { model: 'm', messages: [user('x')], user: 'u' },
  { model: 'm', messages: [user('x')], n: 1 },
  { model: 'm', messages: [user('x')], stop: 'END' },
  { model: 'm', messages: [{ role: 'user', content: 'x', name: 'ann' }] },
  { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'x' }] }] },
  { model: 'm', messages: [{ role: 'tool', content: 'x', tool_call_id: 'c' }] },
  { model: 'm', messages: [{ role: 'assistant', content: null }] },
  { model: 'm', messages: [{ role: 'user' }] },
  { model: 'm', messages: [user('x'), null] },
  { model: 'm', messages: 'hello' },
  { model: 'm', messages: [user('x')], stream: 'yes' },
  { model: 'm', messages: [user('x')], stream: true, stream_options: { include_usage: 'yes' } },
  { model: 'm', messages: [user('x')], stream: true, stream_options: { other: true } },
  { model: 'm', messages: [user('x')], stream: true, stream_options: [] },
  { model: 'm', messages: [user('x')], max_tokens: 0 },
  { model: 'm', messages: [user('x')], max_tokens: 1.5 },
  { model: 'm', messages: [user('x')], max_completion_tokens: 1e300 },
  { model: 'm', messages: [user('x')], temperature: 2.5 },
  { model: 'm', messages: [user('x')], temperature: '1' },
  { model: 'm', messages: [user('x')], top_p: -0.1 },
];

describe('isPlainOpenAIChatBody', () => {
  it.each(PLAIN.map((body) => [JSON.stringify(body), body]))(
    'takes %s as it is: the schema gives back the same value',
    (_, body) => {
      expect(isPlainOpenAIChatBody(body)).toBe(true);
      expect(openAIChatRequestSchema.parse(structuredClone(body))).toEqual(body);
    },
  );

  it.each(NOT_PLAIN.map((body) => [JSON.stringify(body), body]))('leaves %s to the schema', (_, body) => {
    expect(isPlainOpenAIChatBody(body)).toBe(false);
  });

  it('decodes a plain body as the schema path would, and leaves the body unchanged', () => {
    const body = {
      model: 'beta-5.4',
      messages: [{ role: 'system', content: 'Be brief.' }, user('Hi')],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 64,
      temperature: 0.5,
    };
    const copy = structuredClone(body);
    const decoded = decodeOpenAIChatRequest(body);
    expect(body).toEqual(copy);
    expect(decoded.includeUsage).toBe(true);
    expect(decoded.request).toMatchObject({
      model: 'beta-5.4',
      system: [{ type: 'text', text: 'Be brief.' }],
      stream: true,
      maxOutputTokens: 64,
      sampling: { temperature: 0.5 },
      extensions: {},
    });
  });

  it('still refuses what the schema path refused on a plain body', () => {
    expect(() =>
      decodeOpenAIChatRequest({ model: 'm', messages: [user('x')], stream_options: { include_usage: true } }),
    ).toThrow(/stream_options/);
  });
});
