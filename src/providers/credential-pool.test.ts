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
    expect(credentials.status(500)).toEqual([
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
    expect(credentials.pick(0, first).target).toBe(2);
    // The round-robin cursor is back at #1 now, yet a retry after #1 failed still gets #2.
    expect(credentials.pick(0, first).target).toBe(2);
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
