import { describe, expect, it } from 'vitest';
import { plainRequest } from './openai-decode-request.js';
import { openAIChatRequestSchema } from './openai-chat-schema.js';

/** Values each field may take in the generated bodies: valid ones, edge ones and invalid ones. */
const VALUES: Record<string, unknown[]> = {
  model: ['m', 3, null, { a: 1 }],
  stream: [true, false, null, 'yes', 1],
  max_tokens: [1, 100, 0, -1, 1.5, null, '5', 2 ** 60],
  max_completion_tokens: [5, 0, null, 1e300],
  temperature: [0, 2, 2.01, -0.1, null, '1', 1.5],
  top_p: [0, 1, 1.1, null],
  presence_penalty: [-2, 2, -2.5, null],
  frequency_penalty: [0, 3, null],
  seed: [1, -5, 1.5, null, 'x'],
  user: ['u', '', 5, null],
  n: [1, 2],
  stream_options: [{ include_usage: true }, { include_usage: false, include_obfuscation: true }, {}, null, { include_usage: 'yes' }, { other: 1 }, [], 'x'],
  tools: [[]],
  extra_field: [1],
};

const MESSAGES: unknown[] = [
  [{ role: 'user', content: 'hi' }],
  [{ role: 'system', content: 's' }, { role: 'user', content: 'hi', name: 'bob' }, { role: 'assistant', content: 'yo' }],
  [{ role: 'developer', content: '' }],
  [],
  [{ role: 'user', content: 'hi', name: 5 }],
  [{ role: 'user', content: 'hi', extra: 1 }],
  [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
  [{ role: 'tool', content: 'r', tool_call_id: 'c' }],
  [{ role: 'assistant', content: null }],
  [{ role: 'robot', content: 'x' }],
  [{ content: 'x' }],
  [null],
  ['user'],
  'hi',
];

function* bodies(): Generator<Record<string, unknown>> {
  const fields = Object.keys(VALUES);
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (const messages of MESSAGES) {
    yield { messages };
    for (let round = 0; round < 300; round++) {
      const body: Record<string, unknown> = { model: 'm', messages };
      for (const field of fields) {
        if (random() < 0.15) {
          const values = VALUES[field]!;
          body[field] = values[Math.floor(random() * values.length)];
        }
      }
      if (random() < 0.1) delete body.messages;
      yield body;
    }
  }
}

describe('the plain-request fast path of the OpenAI decoder', () => {
  it('accepts only bodies the schema accepts, and gives the same value', () => {
    let accepted = 0;
    for (const body of bodies()) {
      const plain = plainRequest(body);
      if (plain === undefined) continue;
      accepted++;
      const parsed = openAIChatRequestSchema.safeParse(body);
      expect(parsed.success, JSON.stringify(body)).toBe(true);
      expect(plain, JSON.stringify(body)).toStrictEqual(parsed.data);
      expect(Object.keys(plain).sort()).toEqual(Object.keys(parsed.data!).sort());
    }
    expect(accepted).toBeGreaterThan(50);
  });
});
