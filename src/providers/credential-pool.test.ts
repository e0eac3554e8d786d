import { describe, expect, it } from 'vitest';
import type { GatewayMetrics } from '../observability/gateway-metrics.js';
import { NO_METRICS } from '../observability/gateway-metrics.js';
import { CredentialPool, pooledCredential } from './credential-pool.js';

function recordingMetrics(): { metrics: GatewayMetrics; states: string[] } {
  const states: string[] = [];
  return {
    states,
    metrics: {
      ...NO_METRICS,
      credentialState: (vendor, label, cooling) => states.push(`${vendor}/${label}=${cooling ? 1 : 0}`),
    },
  };
}

function pool(count: number, threshold = 2, cooldownMs = 1_000, metrics: GatewayMetrics = NO_METRICS) {
  const credentials = Array.from({ length: count }, (_, index) =>
    pooledCredential(`#${index + 1}`, 'http://upstream', index + 1),
  );
  return new CredentialPool('openai', credentials, { failureThreshold: threshold, cooldownMs }, metrics);
}

describe('CredentialPool', () => {
  it('spreads requests round-robin over the credentials', () => {
    const credentials = pool(3);
    expect([1, 2, 3, 4, 5, 6].map(() => credentials.pick(0).target)).toEqual([1, 2, 3, 1, 2, 3]);
  });

  it('cools a credential down after `failureThreshold` consecutive failures and moves traffic to the others', () => {
    const { metrics, states } = recordingMetrics();
    const credentials = pool(2, 2, 1_000, metrics);
    const first = credentials.pick(0);
    expect(credentials.failed(first, 0)).toBe(false);
    expect(credentials.failed(first, 10)).toBe(true);
    expect(states).toEqual(['openai/#1=0', 'openai/#2=0', 'openai/#1=1']);
    expect([0, 1, 2, 3].map(() => credentials.pick(500).target)).toEqual([2, 2, 2, 2]);
    expect(credentials.status(500)).toMatchObject([
      {
        vendor: 'openai',
        label: '#1',
        baseUrl: 'http://upstream',
        state: 'cooling_down',
        coolingDownUntil: new Date(1_010).toISOString(),
        recentFailures: 2,
      },
      {
        vendor: 'openai',
        label: '#2',
        baseUrl: 'http://upstream',
        state: 'healthy',
        coolingDownUntil: undefined,
        recentFailures: 0,
      },
    ]);
  });

  it('a success resets the failure count, so only consecutive failures open the circuit', () => {
    const credentials = pool(1, 2);
    const only = credentials.pick(0);
    credentials.failed(only, 0);
    credentials.succeeded(only);
    expect(credentials.failed(only, 0)).toBe(false);
    expect(credentials.status(0)[0]!.state).toBe('healthy');
  });

  it('after the cooldown the credential is probed: a success closes the circuit, a failure reopens it at once', () => {
    const { metrics, states } = recordingMetrics();
    const credentials = pool(2, 2, 1_000, metrics);
    const first = credentials.pick(0);
    credentials.failed(first, 0);
    credentials.failed(first, 0);
    expect(credentials.status(1_500)[0]!.state).toBe('probing');
    expect(credentials.failed(first, 1_500)).toBe(true);
    expect(credentials.status(1_600)[0]!.state).toBe('cooling_down');
    credentials.succeeded(first);
    expect(credentials.status(1_600)[0]!.state).toBe('healthy');
    expect(states.slice(2)).toEqual(['openai/#1=1', 'openai/#1=0']);
  });

  it('avoids the credential that just failed when another is available', () => {
    const credentials = pool(2, 5);
    const first = credentials.pick(0);
    expect(credentials.pick(0, [first]).target).toBe(2);
    // The round-robin cursor is back at #1 now, yet a retry after #1 failed still gets #2.
    expect(credentials.pick(0, [first]).target).toBe(2);
    expect(credentials.hasAlternative(0, first)).toBe(true);
  });

  it('when every credential is cooling down, the one back soonest is still used rather than refusing', () => {
    const credentials = pool(2, 1, 1_000);
    const [first, second] = [credentials.pick(0), credentials.pick(0)];
    credentials.failed(second, 0);
    credentials.failed(first, 100);
    expect(credentials.pick(200).target).toBe(2);
    expect(credentials.hasAlternative(200, second)).toBe(false);
  });
});

describe('CredentialPool with affinity keys (sticky conversations)', () => {
  const keys = (count: number, prefix = 'conversation') =>
    Array.from({ length: count }, (_, index) => `${prefix}-${index}`);

  it('sends every request of one conversation to the same credential', () => {
    const credentials = pool(4);
    for (const key of keys(50)) {
      const first = credentials.pick(0, [], key).target;
      // Round-robin requests in between move the cursor; they do not move the conversation.
      credentials.pick(0);
      expect(Array.from({ length: 10 }, () => credentials.pick(0, [], key).target)).toEqual(Array(10).fill(first));
    }
  });

  it('spreads conversations evenly over the credentials', () => {
    const credentials = pool(4);
    const counts = new Map<number, number>();
    for (const key of keys(8_000)) {
      const target = credentials.pick(0, [], key).target;
      counts.set(target, (counts.get(target) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual([1, 2, 3, 4]);
    // 2,000 each on average; a fair split stays within a few percent of it.
    for (const count of counts.values()) expect(Math.abs(count - 2_000)).toBeLessThan(150);
  });

  it('does not depend on the order the credentials are listed in, only on their labels', () => {
    const forward = pool(3);
    const credentials = [3, 1, 2].map((index) => pooledCredential(`#${index}`, 'http://upstream', index));
    const reversed = new CredentialPool('openai', credentials, { failureThreshold: 2, cooldownMs: 1_000 });
    for (const key of keys(200)) expect(reversed.pick(0, [], key).target).toBe(forward.pick(0, [], key).target);
  });

  it('re-pins a conversation only when its credential fails or cools down, then keeps it on the new one', () => {
    const credentials = pool(3, 2, 1_000);
    const key = 'conversation-7';
    const pinned = credentials.pick(0, [], key);
    // The retry after a failed attempt goes elsewhere, but one failure does not move the conversation.
    const retry = credentials.pick(0, [pinned], key);
    expect(retry).not.toBe(pinned);
    credentials.failed(pinned, 0);
    expect(credentials.pick(10, [], key)).toBe(pinned);
    // A second failure opens the circuit: the conversation moves to its next-highest credential and stays there.
    credentials.failed(pinned, 20);
    const moved = credentials.pick(30, [], key);
    expect(moved).toBe(retry);
    for (const now of [40, 500, 900]) expect(credentials.pick(now, [], key)).toBe(moved);
    // Other conversations pinned elsewhere stay where they were.
    for (const other of keys(100, 'other')) {
      const before = pool(3).pick(0, [], other).target;
      if (before !== pinned.target) expect(credentials.pick(40, [], other).target).toBe(before);
    }
  });

  it('when every credential but the one that just failed is cooling down, retries on that one', () => {
    const credentials = pool(2, 1, 1_000);
    const key = 'conversation-1';
    const pinned = credentials.pick(0, [], key);
    const other = credentials.pick(0, [pinned], key);
    credentials.failed(other, 0);
    expect(credentials.pick(10, [pinned], key)).toBe(pinned);
  });

  it("a retry works down the conversation's own order, never back to a credential it tried while another is left", () => {
    const credentials = pool(3, 5);
    const key = 'conversation-3';
    const first = credentials.pick(0, [], key);
    const second = credentials.pick(0, [first], key);
    const third = credentials.pick(0, [first, second], key);
    expect(new Set([first, second, third]).size).toBe(3);
    // All tried: the conversation's own credential again.
    expect(credentials.pick(0, [first, second, third], key)).toBe(first);
    // The same for round-robin requests.
    const a = credentials.pick(0);
    const b = credentials.pick(0, [a]);
    expect(new Set([a, b, credentials.pick(0, [a, b])]).size).toBe(3);
  });
});

describe('CredentialPool weights and per-deployment limits', () => {
  it('spreads requests without affinity exactly by weight (smooth weighted round-robin)', () => {
    const credentials = [
      pooledCredential('a', 'http://a', 'a', 'a', { weight: 3 }),
      pooledCredential('b', 'http://b', 'b', 'b', { weight: 1 }),
    ];
    const weighted = new CredentialPool('openai', credentials, { failureThreshold: 1, cooldownMs: 1_000 });
    const picks = Array.from({ length: 400 }, () => weighted.pick(0).target);
    expect(picks.filter((target) => target === 'a')).toHaveLength(300);
  });

  it('skips a credential at its requests-per-minute limit, and refuses with a 429 when all are', () => {
    const credentials = [
      pooledCredential('a', 'http://a', 'a', 'a', { rpm: 2 }),
      pooledCredential('b', 'http://b', 'b', 'b', { rpm: 1 }),
    ];
    const limited = new CredentialPool('openai', credentials, { failureThreshold: 1, cooldownMs: 1_000 });
    expect([0, 1, 2].map((at) => limited.pick(at).target).sort()).toEqual(['a', 'a', 'b']);
    expect(() => limited.pick(3)).toThrow(expect.objectContaining({ code: 'upstream_rate_limited', status: 429 }));
    // A minute after the first requests, their slots are free again.
    expect(limited.pick(60_001).target).toBe('a');
  });
});

describe('CredentialPool half-open probes and concurrency limits', () => {
  const policy = { failureThreshold: 1, cooldownMs: 1_000 };

  it('lets one probe through after the cool-down while the other requests go elsewhere', () => {
    const [a, b] = [pooledCredential('a', 'http://a', 'a'), pooledCredential('b', 'http://b', 'b')];
    const credentials = new CredentialPool('openai', [a, b], policy);
    credentials.failed(a, 0);
    expect([0, 1, 2].map(() => credentials.pick(500).target)).toEqual(['b', 'b', 'b']);
    const picks = [0, 1, 2, 3].map(() => credentials.pick(1_000).target);
    // Round-robin reaches `a` once: its probe. While it is in flight `a` gets nothing more.
    expect(picks.filter((target) => target === 'a')).toHaveLength(1);
    expect(a.probing).toBe(true);
    credentials.succeeded(a);
    expect(credentials.status(1_000)[0]!.state).toBe('healthy');
    expect([0, 1, 2, 3].map(() => credentials.pick(1_000).target).filter((target) => target === 'a')).toHaveLength(2);
  });

  it('re-opens after a failed probe for twice the last cool-down, up to maxCooldownMs', () => {
    const [a, b] = [pooledCredential('a', 'http://a', 'a'), pooledCredential('b', 'http://b', 'b')];
    const credentials = new CredentialPool('openai', [a, b], { ...policy, maxCooldownMs: 3_000 });
    credentials.failed(a, 0);
    expect(a.coolingUntil).toBe(1_000);
    const cooldowns: number[] = [];
    let now = 1_000;
    for (let round = 0; round < 4; round++) {
      while (credentials.pick(now) !== a); // the probe
      credentials.failed(a, now);
      cooldowns.push(a.coolingUntil - now);
      now = a.coolingUntil;
    }
    expect(cooldowns).toEqual([2_000, 3_000, 3_000, 3_000]);
    // A success forgets the backoff: the next opening cools down for cooldownMs again.
    credentials.succeeded(a);
    credentials.failed(a, now);
    expect(a.coolingUntil - now).toBe(1_000);
  });

  it('lets the next request probe when a probe ends without a verdict', () => {
    const [a, b] = [pooledCredential('a', 'http://a', 'a'), pooledCredential('b', 'http://b', 'b')];
    const credentials = new CredentialPool('openai', [a, b], policy);
    credentials.failed(a, 0);
    while (credentials.pick(1_000) !== a);
    credentials.release(a);
    expect(credentials.pick(1_000, [b]).target).toBe('a');
  });

  it('skips a deployment at its maxConcurrent, refuses with a 429 when every one is full, and frees a slot on release', () => {
    const full = { inFlight: 0, maxConcurrent: 2 };
    const single = { inFlight: 0, maxConcurrent: 1 };
    const credentials = [
      pooledCredential('full/#1', 'http://a', 'a1', 'full/#1', { deployment: 'full', load: full }),
      pooledCredential('full/#2', 'http://a', 'a2', 'full/#2', { deployment: 'full', load: full }),
      pooledCredential('single/#1', 'http://b', 'b', 'single/#1', { deployment: 'single', load: single }),
    ];
    const limited = new CredentialPool('openai', credentials, policy);
    const picked = [0, 1, 2].map(() => limited.pick(0));
    expect(picked.map((credential) => credential.target).sort()).toEqual(['a1', 'a2', 'b']);
    expect([full.inFlight, single.inFlight]).toEqual([2, 1]);
    expect(() => limited.pick(0)).toThrow(expect.objectContaining({ code: 'upstream_rate_limited', status: 429 }));
    // The two credentials of `full` share its limit: freeing one slot lets either take the next request.
    limited.release(picked.find((credential) => credential.target === 'a1')!);
    expect(limited.pick(0).deployment).toBe('full');
    expect(full.inFlight).toBe(2);
  });
});
