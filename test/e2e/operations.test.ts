import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { utcDayNumber } from '../../src/billing/free-allowance.js';
import { rawExchange } from '../helpers/raw-http.js';
import { deadRedisUrl } from '../helpers/free-port.js';
import { spawnGateway, startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/** Longest wait for a raw exchange's answer: far beyond every server timeout these tests provoke. */
const RAW_TIMEOUT_MS = 15_000;

const REQUEST_ID = /^req_[0-9a-f]{32}$/;

async function chat(url: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function messages(url: string, key: string, body: unknown): Promise<Response> {
  return fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function parseRawResponse(raw: string): { status: number; headers: string; body: unknown } {
  const [head, body = ''] = raw.split('\r\n\r\n', 2) as [string, string?];
  return { status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body: JSON.parse(body) };
}

function metricValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('observability: /metrics, /healthz, /readyz, request ids and logs', () => {
  let harness: TestGateway;
  let key: string;
  let accountId: string;
  // The gateway process's wall clock: it stands still here until the test moves it.
  let clock = Date.now();
  const METRICS_TOKEN = 'metrics-token-for-the-scraper-0123';

  beforeAll(async () => {
    // PostgreSQL: the sweeper's test runs a second instance on the same database, which only PostgreSQL serves
    // (an embedded SQLite file has one gateway, its holds in that process's memory).
    harness = await startTestGateway({
      postgres: true,
      fakeClockMs: clock,
      env: { METRICS_TOKEN, SWEEP_INTERVAL_MS: '500', OPENAI_API_KEY: 'sk-upstream-secret-never-logged-0123456789' },
      yaml: 'tiers:\n  tiny:\n    requestsPerMinute: 2\n',
    });
    ({ key, accountId } = await harness.createAccountWithKey());
  });
  afterAll(async () => harness?.close());

  async function scrape(): Promise<string> {
    const response = await fetch(`${harness.gateway.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    return response.text();
  }

  it('/metrics needs the token when METRICS_TOKEN is set, in the OpenAI error shape', async () => {
    for (const authorization of [undefined, 'Bearer wrong-token', `Basic ${METRICS_TOKEN}`]) {
      const response = await fetch(`${harness.gateway.url}/metrics`, {
        headers: authorization === undefined ? {} : { authorization },
      });
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({
        error: { type: 'invalid_request_error', message: expect.any(String) },
      });
    }
    const text = await scrape();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('tollgate_in_flight_requests');
  });

  it('counts requests by route, model and status, with tokens, cost and time to first token', async () => {
    const plain = await chat(harness.gateway.url, key, {
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(plain.status).toBe(200);
    const streamed = await chat(harness.gateway.url, key, {
      model: 'beta-5.4',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    await streamed.text();
    const unknown = await chat(harness.gateway.url, key, {
      model: 'no-such-model',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(unknown.status).toBe(400);
    const failing = await chat(harness.gateway.url, key, {
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'x [[sim fault=error status=400]]' }],
    });
    expect(failing.status).toBe(400);

    // One vendor failure, retried once and then answered: counted by the providers, exported here.
    const retried = await chat(harness.gateway.url, key, {
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'x [[sim fault=error status=503 times=1]]' }],
    });
    expect(retried.status).toBe(200);

    const text = await scrape();
    expect(metricValue(text, 'tollgate_upstream_retries_total{vendor="openai"}')).toBe(1);
    expect(metricValue(text, 'tollgate_upstream_errors_total{vendor="openai",reason="status_503"}')).toBe(1);
    expect(metricValue(text, 'tollgate_upstream_errors_total{vendor="openai",reason="invalid_request"}')).toBe(1);
    expect(metricValue(text, 'tollgate_upstream_credential_cooling_down{vendor="openai",credential="#1"}')).toBe(0);
    expect(
      metricValue(text, 'tollgate_http_requests_total{route="/v1/chat/completions",model="beta-5.4",status="200"}'),
    ).toBe(3);
    expect(
      metricValue(text, 'tollgate_http_requests_total{route="/v1/chat/completions",model="other",status="400"}'),
    ).toBe(1);
    expect(
      metricValue(text, 'tollgate_http_request_duration_seconds_count{route="/v1/chat/completions",model="beta-5.4"}'),
    ).toBe(4);
    expect(metricValue(text, 'tollgate_time_to_first_token_seconds_count{model="beta-5.4"}')).toBe(1);
    expect(metricValue(text, 'tollgate_tokens_total{model="beta-5.4",kind="input"}')).toBeGreaterThan(0);
    expect(metricValue(text, 'tollgate_tokens_total{model="beta-5.4",kind="output"}')).toBeGreaterThan(0);
    // The free allowance covered these requests: nothing charged, so no cost series yet.
    expect(text).not.toMatch(/^tollgate_cost_usd_total\{/m);
    // The probes and the scraper are not measured; the model value of a client never becomes a label.
    expect(text).not.toContain('no-such-model');
    expect(text).not.toContain('route="/metrics"');
  });

  it('counts rate-limit refusals', async () => {
    const tiny = await harness.createAccountWithKey(undefined, 'tiny');
    const statuses: number[] = [];
    for (let index = 0; index < 3; index++) {
      statuses.push(
        (await chat(harness.gateway.url, tiny.key, { model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }] }))
          .status,
      );
    }
    expect(statuses).toEqual([200, 200, 429]);
    expect(metricValue(await scrape(), 'tollgate_rate_limit_refusals_total{limit="requests"}')).toBe(1);
  });

  it('counts reservations the sweeper releases for requests that never settled', async () => {
    // A second instance on the same database and clock admits a request whose vendor never answers and is killed
    // before anything is delivered: its hold has no checkpoint, so once expired it is released, not billed.
    const holds = async () =>
      (await harness.gateway.storage.billing.holds(
        accountId,
        utcDayNumber(clock),
        harness.gateway.config.freeTokensPerDay,
      ))!.holds;
    const doomed = await spawnGateway(harness.env);
    const exited = once(doomed.child, 'exit');
    try {
      const answer = chat(doomed.url, key, {
        model: 'beta-5.4',
        max_tokens: 10,
        messages: [{ role: 'user', content: 'orphan [[sim fault=slow-first-byte delay=forever]]' }],
      });
      await expect.poll(holds, { timeout: 10_000 }).toBe(1);
      doomed.child.kill('SIGKILL');
      await expect(answer).rejects.toThrow();
    } finally {
      doomed.child.kill('SIGKILL');
      await exited;
    }
    clock += 16 * 60_000;
    harness.setClock(clock);
    let released: number | undefined;
    for (let attempt = 0; attempt < 40 && released !== 1; attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      released = metricValue(await scrape(), 'tollgate_orphaned_reservations_released_total');
    }
    expect(released).toBe(1);
    expect(await holds()).toBe(0);
  });

  it('/healthz is alive and /readyz reports storage ready', async () => {
    expect(await (await fetch(`${harness.gateway.url}/healthz`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${harness.gateway.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { storage: 'ok', settlement_journal: 'ok' } });
  });

  it('every response carries our own x-request-id (a client-sent one is ignored), and the log line names it', async () => {
    const responses = [
      await chat(
        harness.gateway.url,
        key,
        { model: 'beta-5.4', messages: [{ role: 'user', content: 'hi' }] },
        { 'x-request-id': 'client-chosen' },
      ),
      await chat(harness.gateway.url, 'sk-tg-not-a-real-key', {}),
      await fetch(`${harness.gateway.url}/nowhere`),
      await messages(harness.gateway.url, key, '{"broken'),
    ];
    for (const response of responses) {
      const id = response.headers.get('x-request-id');
      expect(id).toMatch(REQUEST_ID);
      await response.arrayBuffer();
      await expect.poll(() => harness.logs.some((line) => line.includes(`"reqId":"${id}"`))).toBe(true);
    }
  });

  it('never logs API keys, upstream credentials, cookies or passwords, even at trace level', async () => {
    const password = 'a-password-nobody-may-read-9876';
    await fetch(`${harness.gateway.url}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'logs@example.com', password }),
    });
    await fetch(`${harness.gateway.url}/api/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: 'tollgate_session=cookie-secret-value-1234' },
      body: JSON.stringify({ email: 'logs@example.com', password: `${password}-wrong` }),
    });
    await chat(harness.gateway.url, key, {
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'hi [[sim fault=error status=401]]' }],
    });
    await chat(harness.gateway.url, key, {
      model: 'beta-5.4',
      messages: [{ role: 'user', content: 'hi [[sim fault=error status=500]]' }],
    });
    await fetch(`${harness.gateway.url}/v1/models?api_key=${key}`, { headers: { 'x-api-key': key } });
    await harness.flushLogs();
    const logs = harness.logs.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of [
      key,
      key.slice(-20),
      'sk-upstream-secret-never-logged',
      password,
      'cookie-secret-value-1234',
    ]) {
      expect(logs).not.toContain(secret);
    }
  });
});

describe('readiness with Redis', () => {
  it('reports Redis ok when it answers, and 503 naming it when it does not (fail-closed)', async () => {
    const live = await startTestGateway({ env: { REDIS_URL: 'redis://127.0.0.1:6379' } });
    const dead = await startTestGateway({ env: { REDIS_URL: await deadRedisUrl(), RATE_LIMIT_FAIL_OPEN: 'false' } });
    try {
      const ok = await fetch(`${live.gateway.url}/readyz`);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({
        status: 'ready',
        checks: { storage: 'ok', settlement_journal: 'ok', redis: 'ok' },
      });
      const down = await fetch(`${dead.gateway.url}/readyz`);
      expect(down.status).toBe(503);
      expect(await down.json()).toEqual({
        status: 'not_ready',
        checks: { storage: 'ok', settlement_journal: 'ok', redis: 'unavailable' },
      });
      // Liveness does not depend on Redis.
      expect((await fetch(`${dead.gateway.url}/healthz`)).status).toBe(200);
    } finally {
      await live.close();
      await dead.close();
    }
  });
});

describe('HTTPS', () => {
  let directory: string;
  let harness: TestGateway;
  let certificate: Buffer;

  beforeAll(async () => {
    directory = mkdtempSync(join(tmpdir(), 'tollgate-tls-'));
    const certFile = join(directory, 'cert.pem');
    const keyFile = join(directory, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-days',
        '1',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    certificate = readFileSync(certFile);
    harness = await startTestGateway({ env: { TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile } });
  });
  afterAll(async () => {
    await harness?.close();
    if (directory) rmSync(directory, { recursive: true, force: true });
  });

  it('serves the API over TLS with the configured certificate', async () => {
    expect(harness.gateway.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const { key } = await harness.createAccountWithKey();
    const dispatcher = new Agent({ connect: { ca: certificate } });
    try {
      const response = await undiciFetch(`${harness.gateway.url}/v1/chat/completions`, {
        method: 'POST',
        dispatcher,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'beta-5.4', messages: [{ role: 'user', content: 'hello over TLS' }] }),
      });
      expect(response.status).toBe(200);
      expect(
        ((await response.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content,
      ).toBeTruthy();
    } finally {
      await dispatcher.close();
    }
  });

  it('refuses clients that do not trust the certificate, and plain HTTP on the TLS port', async () => {
    await expect(fetch(`${harness.gateway.url}/healthz`)).rejects.toThrow();
    await expect(fetch(`${harness.gateway.url.replace('https:', 'http:')}/healthz`)).rejects.toThrow();
  });

  it('fails to start when a certificate file cannot be read, naming the setting', async () => {
    await expect(
      startTestGateway({
        env: { TLS_CERT_FILE: join(directory, 'missing.pem'), TLS_KEY_FILE: join(directory, 'key.pem') },
      }),
    ).rejects.toThrow(/TLS_CERT_FILE/);
  });
});

describe('TRUST_PROXY', () => {
  it('takes the client address from X-Forwarded-For only when the proxy is trusted', async () => {
    const direct = await startTestGateway();
    const proxied = await startTestGateway({ env: { TRUST_PROXY: 'true' } });
    try {
      for (const harness of [direct, proxied]) {
        const response = await fetch(`${harness.gateway.url}/healthz`, {
          headers: { 'x-forwarded-for': '203.0.113.7' },
        });
        const id = response.headers.get('x-request-id')!;
        await response.text();
        await expect
          .poll(() => harness.logs.find((line) => line.includes(`"reqId":"${id}"`) && line.includes('"ip"')))
          .toBeDefined();
      }
      // The JSON log lines; the process also prints its start-up banner in plain text.
      const ipOf = (harness: TestGateway) =>
        harness.logs
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as { url?: string; ip?: string })
          .find((line) => line.url === '/healthz')!.ip;
      expect(ipOf(direct)).toBe('127.0.0.1');
      expect(ipOf(proxied)).toBe('203.0.113.7');
    } finally {
      await direct.close();
      await proxied.close();
    }
  });
});

describe('input limits', () => {
  let harness: TestGateway;
  let key: string;

  beforeAll(async () => {
    harness = await startTestGateway({
      env: {
        BODY_LIMIT_BYTES: '524288',
        MAX_HEADER_BYTES: '4096',
        HEADERS_TIMEOUT_MS: '1000',
        REQUEST_TIMEOUT_MS: '2000',
      },
    });
    ({ key } = await harness.createAccountWithKey());
  });
  afterAll(async () => harness?.close());

  const user = (content: string) => ({ role: 'user', content });

  it('a body over BODY_LIMIT_BYTES is 413 in the caller’s shape', async () => {
    const big = 'x'.repeat(600_000);
    const openai = await chat(harness.gateway.url, key, { model: 'beta-5.4', messages: [user(big)] });
    expect(openai.status).toBe(413);
    expect(await openai.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'payload_too_large' } });
    const anthropic = await messages(harness.gateway.url, key, {
      model: 'alpha-sonnet-5',
      max_tokens: 10,
      messages: [user(big)],
    });
    expect(anthropic.status).toBe(413);
    expect(await anthropic.json()).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
  });

  it('refuses nesting deeper than 64 levels, over-long keys and model ids, and too many messages', async () => {
    const deep = `{"model":"beta-5.4","messages":[{"role":"user","content":"hi"}],"metadata":${'['.repeat(100)}${']'.repeat(100)}}`;
    const cases: Array<[unknown, RegExp]> = [
      [deep, /deeper than 64 levels/],
      [{ model: 'beta-5.4', messages: [user('hi')], ['k'.repeat(2_000)]: 1 }, /key longer than 1024/],
      [{ model: 'm'.repeat(300), messages: [user('hi')] }, /'model': longer than 256/],
      [
        { model: 'beta-5.4', messages: Array.from({ length: 10_001 }, () => user('x')) },
        /'messages'.*at most 10000 messages/,
      ],
    ];
    for (const [body, message] of cases) {
      const openai = await chat(harness.gateway.url, key, body);
      expect(openai.status).toBe(400);
      expect(((await openai.json()) as { error: { message: string; type: string } }).error).toMatchObject({
        type: 'invalid_request_error',
        message: expect.stringMatching(message),
      });
      const anthropic = await messages(
        harness.gateway.url,
        key,
        typeof body === 'string'
          ? body.replace('"model":"beta-5.4"', '"model":"alpha-sonnet-5","max_tokens":5')
          : { ...(body as object), max_tokens: 5 },
      );
      expect(anthropic.status).toBe(400);
      expect(await anthropic.json()).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message: expect.stringMatching(message) },
      });
    }
    expect(
      await harness.gateway.storage.usage.listByAccount(
        (await harness.gateway.keys.authenticate(key)).organisation.id,
        10,
      ),
    ).toEqual([]);
  });

  it('a request head over MAX_HEADER_BYTES is 431 in the caller’s shape, then the connection closes', async () => {
    const filler = 'a'.repeat(6_000);
    const openai = parseRawResponse(
      await rawExchange(
        harness.gateway.url,
        RAW_TIMEOUT_MS,
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Filler: ${filler}\r\n\r\n`,
      ),
    );
    expect(openai.status).toBe(431);
    expect(openai.headers).toContain('connection: close');
    expect(openai.body).toMatchObject({ error: { type: 'invalid_request_error', code: 'headers_too_large' } });
    const anthropic = parseRawResponse(
      await rawExchange(
        harness.gateway.url,
        RAW_TIMEOUT_MS,
        `POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Filler: ${filler}\r\n\r\n`,
      ),
    );
    expect(anthropic.status).toBe(431);
    expect(anthropic.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('a client that never finishes its headers (slow loris) gets 408 and is disconnected', async () => {
    const answer = parseRawResponse(
      await rawExchange(
        harness.gateway.url,
        RAW_TIMEOUT_MS,
        'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Slow: ',
      ),
    );
    expect(answer.status).toBe(408);
    expect(answer.body).toMatchObject({ error: { code: 'request_timeout' } });
  });

  it('a client that never finishes its body is cut off after REQUEST_TIMEOUT_MS', async () => {
    const answer = parseRawResponse(
      await rawExchange(
        harness.gateway.url,
        RAW_TIMEOUT_MS,
        `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"model":`,
      ),
    );
    expect(answer.status).toBe(408);
    expect(answer.body).toMatchObject({ error: { type: 'invalid_request_error', code: 'request_timeout' } });
  });

  it('malformed HTTP is a 400 in JSON, not a crash', async () => {
    const answer = parseRawResponse(await rawExchange(harness.gateway.url, RAW_TIMEOUT_MS, 'GARBAGE\r\n\r\n'));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { type: 'invalid_request_error' } });
    expect((await fetch(`${harness.gateway.url}/healthz`)).status).toBe(200);
  });
});
