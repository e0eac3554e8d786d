import { describe, expect, it } from 'vitest';
import { GatewayError } from '../canonical/errors.js';
import type { CanonicalEvent } from '../canonical/events.js';
import type { CanonicalRequest } from '../canonical/request.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import { NO_METRICS, type GatewayMetrics } from '../observability/gateway-metrics.js';
import { CredentialPool, pooledCredential } from './credential-pool.js';
import { FailoverProvider, type ClosableAdapter } from './failover-provider.js';
import type { ProviderCall, ProviderResponse } from './types.js';

/**
 * A vendor stand-in per credential: each call takes the next scripted outcome. The thing under test is the
 * retry and failover logic, so the vendor's behaviour is scripted rather than simulated over HTTP here (the
 * e2e suites test the same paths against the simulator).
 */
type Outcome = 'ok' | GatewayError | { breaksAfter: number; error: GatewayError };

class ScriptedVendor implements ClosableAdapter {
  readonly vendor = 'openai' as const;
  calls = 0;
  constructor(private readonly script: Outcome[]) {}

  async call(_call: ProviderCall): Promise<ProviderResponse> {
    const outcome = this.script[Math.min(this.calls, this.script.length - 1)]!;
    this.calls += 1;
    if (outcome instanceof GatewayError) throw outcome;
    const events = outcome === 'ok' ? reply() : brokenReply(outcome.breaksAfter, outcome.error);
    return { events, droppedParameters: [], upstreamRequestId: `req-${this.calls}` };
  }

  async close(): Promise<void> {}
}

async function* reply(): AsyncGenerator<CanonicalEvent> {
  yield { type: 'text-delta', blockId: 'b0', text: 'hello' };
  yield { type: 'finish', reason: 'stop', rawReason: 'stop' };
}

async function* brokenReply(after: number, error: GatewayError): AsyncGenerator<CanonicalEvent> {
  yield { type: 'response-start', id: 'r', model: 'm', created: 0 };
  for (let index = 0; index < after; index++) yield { type: 'text-delta', blockId: 'b0', text: `part${index} ` };
  throw error;
}

const model = new ModelCatalog().resolve('beta-5.4');

function canonical(stream: boolean): CanonicalRequest {
  return { model: 'beta-5.4', messages: [], stream } as unknown as CanonicalRequest;
}

function provider(
  vendors: ScriptedVendor[],
  options: { maxAttempts?: number; threshold?: number; maxDelayMs?: number } = {},
) {
  const errors: string[] = [];
  let retries = 0;
  const metrics: GatewayMetrics = {
    ...NO_METRICS,
    upstreamError: (_vendor, reason) => errors.push(reason),
    upstreamRetry: () => void retries++,
  };
  const credentials = vendors.map((vendor, index) => pooledCredential(`#${index + 1}`, 'http://upstream', vendor));
  const pool = new CredentialPool<ClosableAdapter>(
    'openai',
    credentials,
    { failureThreshold: options.threshold ?? 2, cooldownMs: 60_000 },
    metrics,
  );
  const failover = new FailoverProvider({
    pool,
    retries: { maxAttempts: options.maxAttempts ?? 3, baseDelayMs: 1, maxDelayMs: options.maxDelayMs ?? 5 },
    metrics,
  });
  return { failover, errors, retries: () => retries };
}

async function text(response: ProviderResponse): Promise<string> {
  let out = '';
  for await (const event of response.events) if (event.type === 'text-delta') out += event.text;
  return out;
}

function call(stream: boolean, signal = new AbortController().signal): ProviderCall {
  return { request: canonical(stream), model, signal, requestId: 'r1' };
}

const serverError = () => new GatewayError('upstream_server_error', 'HTTP 500');

describe('FailoverProvider', () => {
  it('retries a 5xx and returns the first success; each failure is counted', async () => {
    const vendor = new ScriptedVendor([serverError(), serverError(), 'ok']);
    const { failover, errors, retries } = provider([vendor]);
    expect(await text(await failover.call(call(true)))).toBe('hello');
    expect(vendor.calls).toBe(3);
    expect(errors).toEqual(['status_5xx', 'status_5xx']);
    expect(retries()).toBe(2);
  });

  it('gives up after maxAttempts with the last error, in the catalog shape', async () => {
    const vendor = new ScriptedVendor([serverError()]);
    const { failover } = provider([vendor], { maxAttempts: 2 });
    await expect(failover.call(call(false))).rejects.toMatchObject({ code: 'upstream_server_error', status: 500 });
    expect(vendor.calls).toBe(2);
  });

  it('never retries a request the vendor refused as invalid', async () => {
    const vendor = new ScriptedVendor([new GatewayError('upstream_invalid_request', 'bad'), 'ok']);
    const { failover } = provider([vendor]);
    await expect(failover.call(call(false))).rejects.toMatchObject({ code: 'upstream_invalid_request' });
    expect(vendor.calls).toBe(1);
  });

  it('passes on a 429 whose retry-after is longer than the gateway may wait, without retrying', async () => {
    const vendor = new ScriptedVendor([
      new GatewayError('upstream_rate_limited', 'slow down', { retryAfterSeconds: 30 }),
      'ok',
    ]);
    const { failover } = provider([vendor]);
    await expect(failover.call(call(false))).rejects.toMatchObject({
      code: 'upstream_rate_limited',
      retryAfterSeconds: 30,
    });
    expect(vendor.calls).toBe(1);
  });

  it("a 429 with another credential available moves on without waiting for this one's retry-after", async () => {
    const limited = new ScriptedVendor([
      new GatewayError('upstream_rate_limited', 'slow down', { retryAfterSeconds: 30 }),
    ]);
    const healthy = new ScriptedVendor(['ok']);
    const { failover } = provider([limited, healthy]);
    expect(await text(await failover.call(call(false)))).toBe('hello');
    expect([limited.calls, healthy.calls]).toEqual([1, 1]);
  });

  it('a refused credential (401) fails over to another at once; alone, it is not retried', async () => {
    const refused = new ScriptedVendor([new GatewayError('upstream_auth_failed', 'refused')]);
    const healthy = new ScriptedVendor(['ok']);
    const { failover } = provider([refused, healthy]);
    expect(await text(await failover.call(call(true)))).toBe('hello');
    const alone = new ScriptedVendor([new GatewayError('upstream_auth_failed', 'refused')]);
    await expect(provider([alone]).failover.call(call(true))).rejects.toMatchObject({ code: 'upstream_auth_failed' });
    expect(alone.calls).toBe(1);
  });

  it('with one credential failing, every request succeeds and the failing one is cooled down', async () => {
    const failing = new ScriptedVendor([serverError()]);
    const healthy = new ScriptedVendor(['ok']);
    const { failover } = provider([failing, healthy], { threshold: 2 });
    for (let request = 0; request < 6; request++)
      expect(await text(await failover.call(call(request % 2 === 0)))).toBe('hello');
    expect(failing.calls).toBe(2);
    expect(healthy.calls).toBe(6);
    expect(failover.credentialStatus(Date.now()).map((status) => status.state)).toEqual(['cooling_down', 'healthy']);
  });

  it('a non-stream reply whose body breaks is retried, and the broken attempt leaves nothing behind', async () => {
    const vendor = new ScriptedVendor([
      { breaksAfter: 2, error: new GatewayError('upstream_bad_response', 'cut') },
      'ok',
    ]);
    const { failover } = provider([vendor]);
    expect(await text(await failover.call(call(false)))).toBe('hello');
    expect(vendor.calls).toBe(2);
  });

  it('a stream is handed over once the vendor accepted it: a later break is the caller’s to report', async () => {
    const vendor = new ScriptedVendor([
      { breaksAfter: 2, error: new GatewayError('upstream_bad_response', 'cut') },
      'ok',
    ]);
    const { failover } = provider([vendor]);
    await expect(text(await failover.call(call(true)))).rejects.toMatchObject({ code: 'upstream_bad_response' });
    expect(vendor.calls).toBe(1);
  });

  it('a stream that fails before its first output event is retried like a refused request', async () => {
    const vendor = new ScriptedVendor([
      { breaksAfter: 0, error: new GatewayError('upstream_unavailable', 'overloaded') },
      'ok',
    ]);
    const { failover, errors } = provider([vendor]);
    expect(await text(await failover.call(call(true)))).toBe('hello');
    expect(vendor.calls).toBe(2);
    expect(errors).toEqual(['status_503']);
  });

  it('stops retrying once the client has gone', async () => {
    const controller = new AbortController();
    const vendor = new ScriptedVendor([serverError()]);
    const { failover } = provider([vendor], { maxAttempts: 5, maxDelayMs: 10_000 });
    controller.abort();
    await expect(failover.call(call(false, controller.signal))).rejects.toBeInstanceOf(GatewayError);
    expect(vendor.calls).toBe(1);
  });

  it('offers countTokens only when the vendor adapters do', () => {
    expect(provider([new ScriptedVendor(['ok'])]).failover.countTokens).toBeUndefined();
  });

  it('keeps a conversation on one credential, and moves it only once that credential fails', async () => {
    // Three credentials that always answer; which one a conversation lands on is the rendezvous hash's choice.
    const vendors = [new ScriptedVendor(['ok']), new ScriptedVendor(['ok']), new ScriptedVendor(['ok'])];
    const { failover } = provider(vendors, { threshold: 1 });
    const conversation = (key: string): ProviderCall => ({ ...call(false), affinityKey: key });
    let failing: ScriptedVendor | undefined;
    // The credential that answered: the one called this time that is not the failing one.
    const servedBy = async (key: string) => {
      const before = vendors.map((vendor) => vendor.calls);
      expect(await text(await failover.call(conversation(key)))).toBe('hello');
      return vendors.findIndex((vendor, index) => vendor !== failing && vendor.calls > before[index]!);
    };
    const home = await servedBy('conversation-a');
    for (let turn = 0; turn < 5; turn++) expect(await servedBy('conversation-a')).toBe(home);
    // Its credential now fails once: the attempt is retried on another, which the conversation then keeps.
    failing = vendors[home]!;
    Object.assign(failing, { script: [serverError()] });
    const failedCalls = failing.calls;
    const moved = await servedBy('conversation-a');
    expect(moved).not.toBe(home);
    for (let turn = 0; turn < 5; turn++) expect(await servedBy('conversation-a')).toBe(moved);
    expect(failing.calls).toBe(failedCalls + 1);
    // Conversations spread: 30 of them reach every credential that is not cooling down.
    const used = new Set<number>();
    for (let index = 0; index < 30; index++) used.add(await servedBy(`conversation-${index}`));
    expect([...used].sort()).toEqual([0, 1, 2].filter((index) => index !== home));
  });
});

describe('FailoverProvider and a deployment’s concurrency slots', () => {
  function limitedProvider(vendor: ScriptedVendor) {
    const load = { inFlight: 0, maxConcurrent: 1 };
    const credential = pooledCredential('d/#1', 'http://upstream', vendor, 'd/#1', { deployment: 'd', load });
    const pool = new CredentialPool<ClosableAdapter>('openai', [credential], { failureThreshold: 5, cooldownMs: 1 });
    const failover = new FailoverProvider({ pool, retries: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 } });
    return { failover, load };
  }
  const call = (stream: boolean): ProviderCall => ({
    request: canonical(stream),
    model,
    signal: new AbortController().signal,
    requestId: 'r',
  });

  it('holds a stream’s slot until its last event, and refuses a second request meanwhile', async () => {
    const { failover, load } = limitedProvider(new ScriptedVendor(['ok']));
    const response = await failover.call(call(true));
    expect(load.inFlight).toBe(1);
    await expect(failover.call(call(true))).rejects.toMatchObject({ code: 'upstream_rate_limited' });
    expect(await text(response)).toBe('hello');
    expect(load.inFlight).toBe(0);
  });

  it('frees the slot of a stream its reader closes early, of a whole reply, and of a failed attempt', async () => {
    const { failover, load } = limitedProvider(new ScriptedVendor(['ok', 'ok', serverError()]));
    const stream = await failover.call(call(true));
    await stream.events[Symbol.asyncIterator]().return?.();
    expect(load.inFlight).toBe(0);
    await failover.call(call(false));
    expect(load.inFlight).toBe(0);
    await expect(failover.call(call(false))).rejects.toBeInstanceOf(GatewayError);
    expect(load.inFlight).toBe(0);
  });
});
