/**
 * The newest @google/genai (3.3), run by Node 24 from the agent test package (test/agents/clients/google-genai.mjs),
 * against the gateway on all eleven models: models.list and models.get, generateContent, generateContentStream,
 * countTokens, JSON output with a schema, and a function-calling loop through `chats` (non-stream with
 * `parametersJsonSchema`, stream with the OpenAPI `parameters`). Every call the SDK made must have succeeded.
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_DEFINITIONS } from '../../src/catalog/models.js';
import { AGENTS_PACKAGE_DIR, NODE_24 } from '../helpers/agents-package.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const MODELS = MODEL_DEFINITIONS.map((definition) => definition.id);

interface Outcome<T> {
  ok: boolean;
  value?: T;
  status?: number | null;
  message?: string;
}
interface Usage {
  promptTokenCount: number;
  candidatesTokenCount: number;
  thoughtsTokenCount?: number;
  totalTokenCount: number;
  cost?: string;
  cost_nano_usd?: string;
}
interface Loop {
  calls: Array<{ name: string; args: { word?: string }; hasId: boolean }>;
  firstFinish: string;
  finalText: string;
  finalFinish: string;
  historyLength: number;
}
interface ModelReport {
  get: Outcome<{ name: string; inputTokenLimit: number; outputTokenLimit: number }>;
  generate: Outcome<{ text: string; finishReason: string; usage: Usage; modelVersion: string; responseId: string }>;
  stream: Outcome<{ text: string; chunks: number; finishReason: string; usage: Usage; modelVersion: string }>;
  countTokens: Outcome<{ totalTokens: number }>;
  json: Outcome<{ text: string }>;
  loop: Outcome<Loop>;
  streamLoop: Outcome<Loop>;
}
interface Report {
  list: Outcome<Array<{ name: string; inputTokenLimit: number; outputTokenLimit: number }>>;
  models: Record<string, ModelReport>;
}

let harness: TestGateway;
let report: Report;
let calls: Array<{ method: string; url: string; status: number }>;

beforeAll(async () => {
  harness = await startTestGateway();
  const { key } = await harness.createAccountWithKey('genai@example.com', 'pro');
  const script = join(AGENTS_PACKAGE_DIR, 'clients/google-genai.mjs');
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GATEWAY_URL: harness.gateway.url,
    API_KEY: key,
    MODELS: MODELS.join(','),
  };
  const { stdout } = await promisify(execFile)(NODE_24, [script], {
    env,
    cwd: AGENTS_PACKAGE_DIR,
    timeout: 400_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  report = JSON.parse(stdout) as Report;
  await harness.flushLogs();
  calls = harness.logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => JSON.parse(line) as { method: string; url: string; status: number });
}, 450_000);

afterAll(async () => {
  await harness?.close();
});

describe('@google/genai 3.3 (Node 24)', () => {
  it('models.list pages through the eleven models in Google shape, with token limits', () => {
    expect(report.list.ok, report.list.message).toBe(true);
    expect(report.list.value!.map((model) => model.name).sort()).toEqual(MODELS.map((id) => `models/${id}`).sort());
    for (const model of report.list.value!) {
      const definition = MODEL_DEFINITIONS.find((candidate) => `models/${candidate.id}` === model.name)!;
      expect(model).toMatchObject({
        inputTokenLimit: definition.contextWindow,
        outputTokenLimit: definition.maxOutputTokens,
      });
    }
  });

  it('every call the SDK made succeeded', () => {
    expect(calls.length).toBeGreaterThan(MODELS.length * 8);
    expect(calls.filter((call) => call.status !== 200)).toEqual([]);
    // The SDK lists and gets models under /v1, and generates under /v1beta.
    expect(
      calls.filter((call) => !call.url.startsWith('/v1beta/models/') && !call.url.startsWith('/v1/models')),
    ).toEqual([]);
  });
});

describe('why the Google routes end streams without data: [DONE]', () => {
  it('@google/genai fails on a final data: [DONE] that an OpenAI-style stream would send', async () => {
    const chunk = { candidates: [{ content: { role: 'model', parts: [{ text: 'hi' }] }, finishReason: 'STOP' }] };
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const script = `
      import { GoogleGenAI } from '@google/genai';
      const ai = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: 'http://127.0.0.1:${port}', retryOptions: { attempts: 1 } } });
      let text = '';
      try {
        for await (const part of await ai.models.generateContentStream({ model: 'm', contents: 'x' })) text += part.text ?? '';
        console.log(JSON.stringify({ ok: true, text }));
      } catch (error) {
        console.log(JSON.stringify({ ok: false, text, message: String(error.message) }));
      }`;
    try {
      const { stdout } = await promisify(execFile)(NODE_24, ['--input-type=module', '-e', script], {
        cwd: AGENTS_PACKAGE_DIR,
        timeout: 60_000,
      });
      const outcome = JSON.parse(stdout) as { ok: boolean; text: string; message?: string };
      expect(outcome.text).toBe('hi');
      expect(outcome.ok).toBe(false);
      expect(outcome.message).toContain('DONE');
    } finally {
      server.close();
    }
  });
});

describe.each(MODELS)('@google/genai on %s', (model) => {
  it('models.get names it', () => {
    const outcome = report.models[model]!.get;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value!.name).toBe(`models/${model}`);
  });

  it('generateContent answers with text, STOP, usageMetadata and the cost', () => {
    const outcome = report.models[model]!.generate;
    expect(outcome.ok, outcome.message).toBe(true);
    const value = outcome.value!;
    expect(value.text.length).toBeGreaterThan(0);
    expect(value.finishReason).toBe('STOP');
    expect(value.modelVersion).toBe(model);
    expect(value.usage.promptTokenCount).toBeGreaterThan(0);
    expect(value.usage.candidatesTokenCount).toBeGreaterThan(0);
    expect(value.usage.totalTokenCount).toBe(
      value.usage.promptTokenCount + value.usage.candidatesTokenCount + (value.usage.thoughtsTokenCount ?? 0),
    );
    expect(BigInt(value.usage.cost_nano_usd!)).toBeGreaterThanOrEqual(0n);
  });

  it('generateContentStream streams the same text, the last chunk with the finish reason and usage', () => {
    const outcome = report.models[model]!.stream;
    expect(outcome.ok, outcome.message).toBe(true);
    const value = outcome.value!;
    expect(value.chunks).toBeGreaterThan(1);
    expect(value.text).toBe(report.models[model]!.generate.value!.text);
    expect(value.finishReason).toBe('STOP');
    expect(value.usage.promptTokenCount).toBe(report.models[model]!.generate.value!.usage.promptTokenCount);
    expect(value.usage.candidatesTokenCount).toBeGreaterThan(0);
  });

  it('countTokens counts the prompt', () => {
    const outcome = report.models[model]!.countTokens;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value!.totalTokens).toBeGreaterThan(0);
  });

  it('responseMimeType application/json with responseJsonSchema is accepted and answered', () => {
    // The simulator writes prose whatever the format asks (the vendors' JSON is their business); what is tested
    // here is that the schema is accepted on every family and the reply comes back.
    const outcome = report.models[model]!.json;
    expect(outcome.ok, outcome.message).toBe(true);
    expect(outcome.value!.text.length).toBeGreaterThan(0);
  });

  it.each(['loop', 'streamLoop'] as const)(
    'a function-calling loop through chats (%s): the call, its response, the answer',
    (which) => {
      const outcome = report.models[model]![which];
      expect(outcome.ok, outcome.message).toBe(true);
      const value = outcome.value!;
      expect(value.calls).toEqual([expect.objectContaining({ name: 'lookup', hasId: true })]);
      expect(typeof value.calls[0]!.args.word).toBe('string');
      expect(value.firstFinish).toBe('STOP');
      expect(value.finalText).toContain('glossary entry for');
      expect(value.finalFinish).toBe('STOP');
      // user, model (call), user (response), model (answer): the SDK kept every turn (a streamed turn as one
      // content per chunk).
      if (which === 'loop') expect(value.historyLength).toBe(4);
      else expect(value.historyLength).toBeGreaterThan(4);
    },
  );
});
