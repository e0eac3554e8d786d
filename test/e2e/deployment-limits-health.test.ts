import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsd } from '../../src/billing/money.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/simulator-server.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/**
 * Per-deployment limits and health through the built gateway, the simulator as every vendor: a deployment at its
 * `maxConcurrent` is skipped (the model's fallback serves, or a 429 when it has none), and a deployment whose
 * circuit opened is probed by one request after its cool-down, re-opened for longer when the probe fails. Both
 * read on `/metrics` per deployment. Each deployment has its own key, so `only-key=` faults hit it alone.
 */

const COOLDOWN_MS = 1_500;

function yamlFor(simulator: RunningSimulator): string {
  return `
deployments:
  delta-one:
    family: delta
    baseUrl: "${simulator.baseUrls.deepseek}"
    apiKey: sk-delta-one
    maxConcurrent: 1
    retries: { maxAttempts: 1 }
  gamma-main: { family: gamma, baseUrl: "${simulator.baseUrls.gemini}", apiKey: sk-gamma-main }
  beta-flaky:
    family: beta
    baseUrl: "${simulator.baseUrls.openai}"
    apiKey: sk-beta-flaky
    circuitBreaker: { failureThreshold: 1, cooldownMs: ${COOLDOWN_MS} }
    retries: { maxAttempts: 2, baseDelayMs: 0, maxDelayMs: 0 }
  beta-steady: { family: beta, baseUrl: "${simulator.baseUrls.openai}", apiKey: sk-beta-steady }
models:
  delta-v4-flash: { deployments: [delta-one], fallbacks: [gamma-3.5-flash] }
  delta-r1: { deployments: [delta-one] }
  gamma-3.5-flash: { deployments: [gamma-main] }
  beta-5.4: { deployments: [beta-flaky, beta-steady] }
`;
}

describe('per-deployment limits and health', () => {
  let simulator: RunningSimulator;
  let harness: TestGateway;
  let openai: OpenAI;
  let key: string;

  beforeAll(async () => {
    simulator = await startSimulator({ port: 0, host: '127.0.0.1' });
    harness = await startTestGateway({ yaml: yamlFor(simulator) });
    const account = await harness.createAccountWithKey(undefined, 'enterprise');
    key = account.key;
    await harness.gateway.storage.billing.credit({
      accountId: account.accountId,
      kind: 'topup',
      amountNano: parseUsd('20'),
      idempotencyKey: `t-${account.accountId}`,
      note: null,
      at: Date.now(),
    });
    openai = new OpenAI({ apiKey: key, baseURL: harness.openaiBaseUrl, maxRetries: 0 });
  });

  afterAll(async () => {
    await harness?.close();
    await simulator?.close();
  });

  /** One series of `/metrics`, by its name and labels (0 when it is not there). */
  async function metric(name: string, labels: Record<string, string>): Promise<number> {
    const text = await (await fetch(`${harness.gateway.url}/metrics`)).text();
    const wanted = Object.entries(labels).map(([label, value]) => `${label}="${value}"`);
    const line = text
      .split('\n')
      .find((row) => row.startsWith(`${name}{`) && wanted.every((pair) => row.includes(pair)));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  }

  const circuit = async (deployment: string) => {
    for (const state of ['closed', 'open', 'half_open'])
      if ((await metric('tollgate_deployment_circuit_state', { deployment, state })) === 1) return state;
    return 'none';
  };

  it('skips a deployment at maxConcurrent: the fallback serves, a model without one gets a 429', async () => {
    // A slow stream holds delta-one's only slot for a few seconds.
    const slow = await openai.chat.completions.create({
      model: 'delta-r1',
      stream: true,
      messages: [{ role: 'user', content: 'Hold the slot [[sim chunk-delay=150 words=25]]' }],
    });
    const reading = (async () => {
      let text = '';
      for await (const chunk of slow) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await metric('tollgate_deployment_in_flight', { deployment: 'delta-one' })).toBe(1);

    const { data, response } = await openai.chat.completions
      .create({ model: 'delta-v4-flash', messages: [{ role: 'user', content: 'Saturated, fall back' }] })
      .withResponse();
    expect(data.model).toBe('gamma-3.5-flash');
    expect(response.headers.get('x-tollgate-model-attempts')).toBe('delta-v4-flash=status_429,gamma-3.5-flash=ok');

    const refused = await openai.chat.completions
      .create({ model: 'delta-r1', messages: [{ role: 'user', content: 'Saturated, nowhere to go' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.APIError);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((refused as InstanceType<typeof OpenAI.APIError>).message).toMatch(/concurrent requests/);

    expect((await reading).length).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await metric('tollgate_deployment_in_flight', { deployment: 'delta-one' })).toBe(0);
    // The slot is free again: the model is served by its own deployment.
    const served = await openai.chat.completions.create({
      model: 'delta-r1',
      messages: [{ role: 'user', content: 'Slot free' }],
    });
    expect(served.model).toBe('delta-r1');
    expect(await metric('tollgate_deployment_requests_total', { deployment: 'delta-one' })).toBe(2);
    expect(await metric('tollgate_deployment_answer_seconds_count', { deployment: 'delta-one' })).toBe(2);
  });

  /**
   * Requests to beta-5.4 until beta-flaky has taken one more attempt; each is served (steady takes the retry). Each
   * new prompt is a new conversation, which the rendezvous hash sends to either deployment evenly: 40 tries all miss
   * less than once in 10^11 runs of this test (it calls this three times), where 10 missed about once in 340.
   */
  async function untilFlakyTried(fault: boolean): Promise<void> {
    const before = await metric('tollgate_deployment_requests_total', { deployment: 'beta-flaky' });
    for (let round = 0; ; round++) {
      expect(round).toBeLessThan(40);
      const content = `Flaky ${Date.now()} ${round} ${fault ? '[[sim error status=503 only-key=sk-beta-flaky]]' : ''}`;
      const reply = await openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content }],
      });
      expect(reply.choices[0]!.message.content).toBeTruthy();
      if ((await metric('tollgate_deployment_requests_total', { deployment: 'beta-flaky' })) > before) return;
    }
  }

  it('opens on failure, lets one probe through after the cool-down, backs off when it fails, closes when it succeeds', async () => {
    expect(await circuit('beta-flaky')).toBe('closed');
    await untilFlakyTried(true);
    const opened = Date.now();
    expect(await circuit('beta-flaky')).toBe('open');
    expect(await metric('tollgate_deployment_failures_total', { deployment: 'beta-flaky', reason: 'status_503' })).toBe(
      1,
    );
    // While open, no request reaches it.
    const tried = await metric('tollgate_deployment_requests_total', { deployment: 'beta-flaky' });
    for (let index = 0; index < 5; index++)
      await openai.chat.completions.create({
        model: 'beta-5.4',
        messages: [{ role: 'user', content: `Open ${index}` }],
      });
    expect(await metric('tollgate_deployment_requests_total', { deployment: 'beta-flaky' })).toBe(tried);
    expect(Date.now() - opened).toBeLessThan(COOLDOWN_MS);

    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 100 - (Date.now() - opened)));
    expect(await circuit('beta-flaky')).toBe('half_open');
    // The probe fails: open again, now for twice the cool-down.
    await untilFlakyTried(true);
    const reopened = Date.now();
    expect(await metric('tollgate_deployment_requests_total', { deployment: 'beta-flaky' })).toBe(tried + 1);
    await new Promise((resolve) => setTimeout(resolve, COOLDOWN_MS + 300));
    expect(await circuit('beta-flaky')).toBe('open');
    await new Promise((resolve) => setTimeout(resolve, 2 * COOLDOWN_MS + 200 - (Date.now() - reopened)));
    expect(await circuit('beta-flaky')).toBe('half_open');
    // A probe that succeeds closes it.
    await untilFlakyTried(false);
    expect(await circuit('beta-flaky')).toBe('closed');
    expect(await metric('tollgate_deployment_failures_total', { deployment: 'beta-flaky', reason: 'status_503' })).toBe(
      2,
    );
  });
});
