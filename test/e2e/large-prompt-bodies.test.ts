import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/simulator-server.js';
import { startRecordingProxy, type RecordedRequest, type RecordingProxy } from '../helpers/recording-proxy.js';
import { fundedAccountWithKey, startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * A large same-format body reaches the vendor with the client's own bytes for the members the gateway leaves as
 * they are (the prompt), and the vendor parses exactly what it parsed when the gateway serialised the whole body.
 * Each body is sent twice: as is, and behind a byte-order mark, which the gateway accepts but whose bytes it does
 * not reuse; the two upstream bodies must be the same JSON value.
 */

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
/** ~200 KB of prose with what a JSON scanner must get right: escaped quotes, backslashes, non-ASCII, emoji. */
const PROMPT = `Summarise: ${'He said "wait\\\\" — naïve café 日本語 😀 \\n\ttab. '.repeat(4_000)}`;

describe('large same-format request bodies', () => {
  let simulator: RunningSimulator;
  let proxy: RecordingProxy;
  let harness: TestGateway;
  let key: string;

  beforeAll(async () => {
    simulator = await startSimulator();
    proxy = await startRecordingProxy(simulator.url);
    harness = await startTestGateway({
      vendors: [],
      yaml: `
vendors:
  openai: { baseUrl: ${proxy.url}/openai/v1, credentials: [{ apiKey: sk-one, label: one }] }
  deepseek: { baseUrl: ${proxy.url}/deepseek, credentials: [{ apiKey: sk-one, label: one }] }
  anthropic: { baseUrl: ${proxy.url}/anthropic, credentials: [{ apiKey: ak-one, label: one }] }
`,
    });
    key = (await fundedAccountWithKey(harness, '100')).key;
  });

  afterAll(async () => {
    await harness?.close();
    await proxy?.close();
    await simulator?.close();
  });

  /** Sends `bytes` to the gateway; what reached the vendor for it, and the client's reply. */
  async function upstreamOf(path: string, bytes: Buffer): Promise<{ upstream: RecordedRequest; reply: string }> {
    const before = proxy.recorded.length;
    const response = await fetch(`${harness.gateway.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'x-api-key': key, 'content-type': 'application/json' },
      body: bytes,
    });
    const reply = await response.text();
    expect(response.status, reply).toBe(200);
    const sent = proxy.recorded.slice(before);
    expect(sent).toHaveLength(1);
    return { upstream: sent[0]!, reply };
  }

  const cases = [
    {
      name: 'an OpenAI client on an OpenAI model',
      path: '/v1/chat/completions',
      body: {
        model: 'beta-5.4',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: PROMPT },
        ],
        temperature: 0.25,
        max_tokens: 64,
        metadata: { team: 'søren', run: '7' },
        store: false,
      },
    },
    {
      name: 'an OpenAI client on an OpenAI model, streamed',
      path: '/v1/chat/completions',
      body: { model: 'beta-5.4', stream: true, messages: [{ role: 'user', content: PROMPT }] },
    },
    {
      name: 'an OpenAI client on a DeepSeek model',
      path: '/v1/chat/completions',
      body: { model: 'delta-v4-flash', messages: [{ role: 'user', content: PROMPT }], top_p: 0.5 },
    },
    {
      name: 'an Anthropic client on an Anthropic model',
      path: '/v1/messages',
      body: {
        model: 'alpha-sonnet-5',
        max_tokens: 64,
        system: 'Be brief.',
        messages: [{ role: 'user', content: [{ type: 'text', text: PROMPT }] }],
        temperature: 0.5,
      },
    },
  ];

  for (const { name, path, body } of cases) {
    it(`${name}: the vendor gets the same value, with the client's bytes of the prompt`, async () => {
      // Indented, so the client's own bytes are told apart from a serialisation's.
      const text = JSON.stringify(body, null, 2);
      const reused = await upstreamOf(path, Buffer.from(text));
      const serialised = await upstreamOf(path, Buffer.concat([BOM, Buffer.from(text)]));
      expect(reused.upstream.body).toEqual(serialised.upstream.body);
      expect(reused.upstream.body.model).not.toBe(body.model);
      const messages = JSON.stringify(body.messages, null, 2).replaceAll('\n', '\n  ');
      expect(reused.upstream.text).toContain(messages);
      expect(serialised.upstream.text).not.toContain(messages);
    });
  }
});
