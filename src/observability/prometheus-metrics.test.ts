import { describe, expect, it } from 'vitest';
import { PrometheusMetrics } from './prometheus-metrics.js';

/** The gateway's own series (the process's default metrics move between scrapes). */
const own = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('tollgate_'))
    .join('\n');

const tokens = (input: number, output: number, cacheRead = 0, cacheWrite = 0) => ({
  input,
  output,
  cacheRead,
  cacheWrite,
});

describe('PrometheusMetrics', () => {
  it('exposes request and token counts summed per label set, cumulative across scrapes', async () => {
    const metrics = new PrometheusMetrics();
    metrics.requestFinished('/v1/chat/completions', 'beta-5.4', 200, 0.004);
    metrics.requestFinished('/v1/chat/completions', 'beta-5.4', 200, 0.2);
    metrics.requestFinished('/v1/chat/completions', 'beta-5.4', 429, 0.001);
    metrics.requestFinished('/v1/messages', 'other', 200, 1.5);
    metrics.usageSettled('beta-5.4', tokens(3, 5), 10n);
    metrics.usageSettled('beta-5.4', tokens(4, 6, 2), 0n);
    const first = await metrics.render();
    expect(first).toContain(
      'tollgate_http_requests_total{route="/v1/chat/completions",model="beta-5.4",status="200"} 2\n',
    );
    expect(first).toContain(
      'tollgate_http_requests_total{route="/v1/chat/completions",model="beta-5.4",status="429"} 1\n',
    );
    expect(first).toContain('tollgate_http_requests_total{route="/v1/messages",model="other",status="200"} 1\n');
    expect(first).toContain(
      'tollgate_http_request_duration_seconds_count{route="/v1/chat/completions",model="beta-5.4"} 3\n',
    );
    expect(first).toContain(
      'tollgate_http_request_duration_seconds_bucket{le="0.005",route="/v1/chat/completions",model="beta-5.4"} 2\n',
    );
    expect(first).toContain('tollgate_tokens_total{model="beta-5.4",kind="input"} 7\n');
    expect(first).toContain('tollgate_tokens_total{model="beta-5.4",kind="output"} 11\n');
    expect(first).toContain('tollgate_tokens_total{model="beta-5.4",kind="cache_read"} 2\n');
    // A kind never counted has no series, as when every event was its own inc.
    expect(first).not.toContain('kind="cache_write"');
    expect(first).toContain('tollgate_cost_usd_total{model="beta-5.4"} 1e-8\n');

    // A scrape with nothing new changes nothing; later events add to what was exposed.
    expect(own(await metrics.render())).toBe(own(first));
    metrics.requestFinished('/v1/chat/completions', 'beta-5.4', 200, 0.01);
    metrics.usageSettled('beta-5.4', tokens(1, 1), 0n);
    const second = await metrics.render();
    expect(second).toContain(
      'tollgate_http_requests_total{route="/v1/chat/completions",model="beta-5.4",status="200"} 3\n',
    );
    expect(second).toContain('tollgate_tokens_total{model="beta-5.4",kind="input"} 8\n');
    expect(second).toContain('tollgate_tokens_total{model="beta-5.4",kind="output"} 12\n');
  });
});
