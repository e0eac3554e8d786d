import { execFile } from 'node:child_process';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatUsd, parseUsd } from '../../src/billing/money.js';
import { AGENTS_PACKAGE_DIR } from '../helpers/agents-package.js';
import { DESKTOP_VIEWPORT, launchChromium, PHONE_VIEWPORT, type BrowserSession } from '../helpers/chromium-browser.js';
import { DashboardClient, PASSWORD, uniqueEmail } from '../helpers/dashboard-client.js';
import { logIn, openNav, screenshot } from '../helpers/dashboard-pages.js';
import { allAxeViolations, brokenWords, overflowProblems } from '../helpers/page-checks.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { ensureWebBuild } from '../helpers/web-build.js';

/**
 * The dashboard's playground in real Chromium against the built gateway: a streamed reply whose cost is the usage
 * record's to the nano-dollar, a conversation of two turns, reasoning folded, a tool call, the same request as curl and
 * SDK code that runs as copied, and refusals (no credit, a model the playground key may not use) in the API's own
 * words. Over HTTP: the route needs the session's CSRF token, refuses bad input with nothing billed, and the playground
 * key has no secret and cannot be revoked. Every state is screenshotted and checked for clipped content and axe
 * violations of any impact at 1280x800 and 390x844.
 */

const TOOLS = JSON.stringify([
  {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
]);

let gateway: TestGateway;
let desktop: BrowserSession;
let page: Page;
const email = uniqueEmail('playground');
let accountId = '';
const problems: string[] = [];

async function inspect(target: Page, name: string): Promise<void> {
  await screenshot(target, name);
  for (const problem of await overflowProblems(target)) problems.push(`${name}: overflow: ${problem}`);
  for (const word of await brokenWords(target)) problems.push(`${name}: word broken mid-way: ${word}`);
  for (const violation of await allAxeViolations(target))
    problems.push(
      `${name}: axe ${violation.impact} ${violation.id} (${violation.help}): ${violation.targets.join(' | ')}`,
    );
}

function runInBash(script: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      'bash',
      ['-e', '-c', script],
      { env: { PATH: process.env.PATH ?? '', ...env } },
      (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`))),
    ),
  );
}

/** A sample as an ES module run by Node, resolving its SDK from the agent test package (which installs all three). */
function runModule(code: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      ['--input-type=module', '-e', code],
      { cwd: AGENTS_PACKAGE_DIR, env: { PATH: process.env.PATH ?? '', ...env } },
      (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`${error.message}\n${stderr}`))),
    ),
  );
}

async function credit(account: string, usd: string): Promise<void> {
  await gateway.gateway.storage.billing.credit({
    accountId: account,
    kind: 'topup',
    amountNano: parseUsd(usd),
    idempotencyKey: `playground-${account}-${usd}-${Date.now()}`,
    note: null,
    at: Date.now(),
  });
}

/** The playground's reply with this request id: its usage record, as the gateway stored it. */
async function usageOf(account: string, requestId: string) {
  const [record] = await gateway.gateway.storage.usage.findByRequestIds(account, [requestId]);
  if (record === undefined) throw new Error(`no usage record for ${requestId}`);
  return record;
}

/** Sends the message box's text and waits until the reply shows its cost; returns the reply's article. */
async function send(target: Page, message: string) {
  await target.getByLabel('Message', { exact: true }).fill(message);
  const before = await target.getByRole('article', { name: /^Reply from/ }).count();
  await target.getByRole('button', { name: 'Send' }).click();
  const reply = target.getByRole('article', { name: /^Reply from/ }).nth(before);
  await reply.getByText(/^Cost \$/).waitFor();
  return reply;
}

beforeAll(async () => {
  await ensureWebBuild();
  // No free tokens: every reply is paid, so its cost shows in full.
  gateway = await startTestGateway({ env: { FREE_TOKENS_PER_DAY: '0' } });
  accountId = (await gateway.gateway.accounts.create({ email, password: PASSWORD })).id;
  await credit(accountId, '5');
  desktop = await launchChromium(DESKTOP_VIEWPORT);
  page = await desktop.context.newPage();
}, 180_000);

afterAll(async () => {
  await desktop?.close();
  await gateway?.close();
});

describe('playground in Chromium', { timeout: 120_000 }, () => {
  it('streams a reply and shows its cost, equal to the usage record of a request of the account', async () => {
    await logIn(page, gateway.gateway.url, email, PASSWORD);
    await openNav(page, 'Playground');
    const picker = page.getByLabel('Model', { exact: true });
    await picker.waitFor();
    // Every model the models API lists for the account, and nothing else.
    const listed = (await picker.locator('option').allTextContents()).sort();
    const client = new DashboardClient(gateway.gateway.url);
    await client.login(email, PASSWORD);
    const models = (await client.get('/api/models')).json.models as Array<{ id: string }>;
    expect(listed).toEqual(models.map((model) => model.id).sort());

    await picker.selectOption('beta-5.4');
    await page.getByLabel('System prompt').fill('You answer in one short paragraph.');
    await page.getByLabel('Temperature').fill('0.4');
    await page.getByLabel('Max tokens').fill('300');
    const reply = await send(page, 'Tell me about toll roads [[sim chunk-delay=20 words=40]]');
    expect((await reply.locator('.playground-text').first().textContent())?.length).toBeGreaterThan(20);
    const costLine = (await reply.getByText(/^Cost \$/).textContent()) ?? '';
    const requestId = (await reply.locator('.playground-cost code').textContent()) ?? '';
    const record = await usageOf(accountId, requestId);
    expect(costLine).toContain(`Cost $${formatUsd(record.costNano)} ·`);
    expect(record.costNano).toBeGreaterThan(0n);
    expect(costLine).toContain(`${record.inputTokens} in`);
    expect(costLine).toContain(`${record.outputTokens} out`);
    // A request of the account through the API's pipeline: its own route, the playground's key, streamed.
    expect(record.route).toBe('playground');
    expect(record.apiKeyId).toMatch(/^key_playground_/);
    expect(record.stream).toBe(true);
    await inspect(page, 'playground-reply');

    // A second turn carries the first: the prompt grows by the first reply.
    const second = await send(page, 'And in one sentence?');
    const secondId = (await second.locator('.playground-cost code').textContent()) ?? '';
    const secondRecord = await usageOf(accountId, secondId);
    expect(secondRecord.inputTokens).toBeGreaterThan(record.inputTokens + 20);
    expect(await page.getByRole('article', { name: 'Your message' }).count()).toBe(2);
  });

  it('folds the reasoning and shows tool calls', async () => {
    await page.getByRole('button', { name: 'Clear conversation' }).click();
    await page.getByLabel('Model', { exact: true }).selectOption('delta-r1');
    const reasoned = await send(page, 'Why do roads have tolls?');
    const reasoning = reasoned.locator('details.playground-reasoning');
    await reasoning.waitFor();
    // Folded until opened.
    expect(await reasoning.getAttribute('open')).toBeNull();
    await reasoning.locator('summary').click();
    expect((await reasoning.locator('.playground-text').textContent())?.length).toBeGreaterThan(10);
    const record = await usageOf(accountId, (await reasoned.locator('.playground-cost code').textContent()) ?? '');
    expect(record.reasoningTokens).toBeGreaterThan(0);
    await inspect(page, 'playground-reasoning');

    await page.getByRole('button', { name: 'Clear conversation' }).click();
    await page.getByLabel('Model', { exact: true }).selectOption('alpha-sonnet-5');
    await page.getByText('Tools (optional)').click();
    await page.getByLabel('Tools as JSON').fill(TOOLS);
    const called = await send(page, 'Weather in Oslo? [[sim tool=get_weather]]');
    const calls = called.getByRole('list', { name: 'Tool calls' });
    await calls.waitFor();
    expect(await calls.textContent()).toContain('get_weather');
    expect(await called.textContent()).toContain('stopped: tool_calls');
    await inspect(page, 'playground-tool-call');
  });

  it('stops a reply mid-stream: the request ends as the caller disconnecting, billed for what was delivered', async () => {
    await page.getByRole('button', { name: 'Clear conversation' }).click();
    await page.getByLabel('Model', { exact: true }).selectOption('beta-5.4');
    await page.getByLabel('Tools as JSON').fill('');
    await page.getByLabel('Message', { exact: true }).fill('A long story [[sim chunk-delay=150 words=400]]');
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = page.getByRole('article', { name: /^Reply from/ });
    await reply.getByText('Streaming…').waitFor();
    await reply.locator('.playground-text').first().waitFor();
    await page.getByRole('button', { name: 'Stop' }).click();
    await reply.getByText('You stopped the reply; what was delivered is billed (see Usage).').waitFor();
    const requestId = (await reply.locator('.playground-cost code').textContent()) ?? '';
    await expect
      .poll(async () => (await gateway.gateway.storage.usage.findByRequestIds(accountId, [requestId]))[0]?.status, {
        timeout: 15_000,
      })
      .toBe('client_disconnected');
    const [stopped] = await gateway.gateway.storage.usage.findByRequestIds(accountId, [requestId]);
    expect(stopped!.route).toBe('playground');
    expect(stopped!.outputTokens).toBeGreaterThan(0);
    expect(stopped!.outputTokens).toBeLessThan(400);
  });

  it('gives the same request as code that runs as copied with TOLLGATE_API_KEY', async () => {
    await page.getByRole('button', { name: 'Clear conversation' }).click();
    await page.getByLabel('Model', { exact: true }).selectOption('alpha-sonnet-5');
    await page.getByLabel('Tools as JSON').fill('');
    await page.getByLabel('Message', { exact: true }).fill("It's a toll road, isn't it?");
    await page.getByRole('button', { name: 'View code' }).click();
    const tabs = page.getByRole('tablist', { name: 'Code language' });
    await tabs.waitFor();
    expect(await tabs.getByRole('tab').allTextContents()).toEqual([
      'curl',
      'OpenAI SDK',
      'Anthropic SDK',
      'Google GenAI SDK',
    ]);
    const snippets: Record<string, string> = {};
    for (const name of ['curl', 'OpenAI SDK', 'Anthropic SDK', 'Google GenAI SDK']) {
      await tabs.getByRole('tab', { name }).click();
      snippets[name] = (await page.getByRole('tabpanel').textContent()) ?? '';
      // The key comes from the environment, never a placeholder assigned over it.
      expect(snippets[name], name).toContain('TOLLGATE_API_KEY');
      expect(snippets[name], name).not.toMatch(/TOLLGATE_API_KEY\s*=|export TOLLGATE_API_KEY/);
      expect(snippets[name], name).toContain('alpha-sonnet-5');
      expect(snippets[name], name).toContain('You answer in one short paragraph.');
    }
    // Quoted for the shell: the apostrophes survive.
    expect(snippets.curl).toContain(`"content": "It'\\''s a toll road, isn'\\''t it?"`);
    await inspect(page, 'playground-code');

    // Each sample, pasted where a real key is exported, gets the model's answer: curl in a shell, the SDK ones as an
    // ES module run by Node where the three SDKs are installed (the agent test package).
    const shell = await gateway.gateway.keys.create(accountId, accountId, { name: 'shell' });
    const secret = shell.secret;
    const answer = JSON.parse(await runInBash(snippets.curl!, { TOLLGATE_API_KEY: secret })) as {
      object: string;
      model: string;
    };
    expect(answer).toMatchObject({ object: 'chat.completion', model: 'alpha-sonnet-5' });
    for (const name of ['OpenAI SDK', 'Anthropic SDK', 'Google GenAI SDK']) {
      const printed = await runModule(snippets[name]!, { TOLLGATE_API_KEY: secret });
      expect(printed.trim().length, name).toBeGreaterThan(10);
    }
    // Four requests with the exported key on the playground's model, one per sample, on three client routes.
    const made = await gateway.gateway.storage.usage.listPage(accountId, 10, undefined, { apiKeyId: shell.record.id });
    expect(made).toHaveLength(4);
    expect(new Set(made.map((record) => record.model))).toEqual(new Set(['alpha-sonnet-5']));
    expect(new Set(made.map((record) => record.route)).size).toBe(3);
  });

  it('lists the playground key as having no secret, and its requests under Usage', async () => {
    await openNav(page, 'API keys');
    const row = page.getByRole('row', { name: /Playground/ });
    await row.getByText('No secret: used by the Playground only').waitFor();
    expect(await row.getByRole('button', { name: /Revoke|Rotate/ }).count()).toBe(0);
    await inspect(page, 'playground-keys');
    await openNav(page, 'Usage');
    await page.getByRole('table', { name: 'Recent requests' }).getByText('Playground').first().waitFor();
  });

  it('shows refusals in the words the API gives: a model the key may not use, its rate and spend limits, no credit', async () => {
    const client = new DashboardClient(gateway.gateway.url);
    await client.login(email, PASSWORD);
    const keys = (await client.get('/api/keys')).json.keys as Array<{ id: string; kind: string }>;
    const playgroundKey = keys.find((key) => key.kind === 'playground')!;
    expect((await client.call('PATCH', `/api/keys/${playgroundKey.id}`, { models: ['beta-5.4'] })).status).toBe(200);

    await openNav(page, 'Playground');
    await page.getByLabel('Model', { exact: true }).selectOption('alpha-sonnet-5');
    await page.getByLabel('Message', { exact: true }).fill('Hello there');
    await page.getByRole('button', { name: 'Send' }).click();
    const refusal = page.getByRole('alert').filter({ hasText: 'The API refused this request' });
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('403 permission_denied');
    expect(await refusal.textContent()).toContain("This API key may not use the model 'alpha-sonnet-5'");
    // Nothing was sent: the message waits in the box.
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('Hello there');
    await inspect(page, 'playground-refused-model');

    // The key's own rate limit: the second request in a minute is refused with the API's 429.
    const limited = await client.call('PATCH', `/api/keys/${playgroundKey.id}`, {
      models: null,
      rateLimit: { requestsPerMinute: 1 },
    });
    expect(limited.status).toBe(200);
    await page.getByLabel('Model', { exact: true }).selectOption('beta-5.4');
    // The minute's one request (answered, or refused when earlier ones are still in the window): the next is over.
    await client.post('/api/playground/chat', { model: 'beta-5.4', messages: [{ role: 'user', content: 'Hi' }] });
    await page.getByLabel('Message', { exact: true }).fill('Over the limit');
    await page.getByRole('button', { name: 'Send' }).click();
    await refusal.filter({ hasText: '429 rate_limit_exceeded' }).waitFor();
    expect(await refusal.textContent()).toContain(
      "Rate limit reached for requests: 1 per minute, this API key's own limit.",
    );

    // The key's spend limit, when what is left cannot hold the request.
    const capped = await client.call('PATCH', `/api/keys/${playgroundKey.id}`, {
      rateLimit: null,
      spendLimit: { usd: '0.00000001', period: 'day' },
    });
    expect(capped.status).toBe(200);
    await page.getByRole('button', { name: 'Send' }).click();
    await refusal.filter({ hasText: '403 key_spend_limit_reached' }).waitFor();
    expect(await refusal.textContent()).toContain("This API key's spend limit of $0.00000001 per day (UTC) is reached");
    expect((await client.call('PATCH', `/api/keys/${playgroundKey.id}`, { spendLimit: null })).status).toBe(200);

    const broke = uniqueEmail('playground-broke');
    const brokeId = (await gateway.gateway.accounts.create({ email: broke, password: PASSWORD })).id;
    const other = await desktop.context.browser()!.newContext({ viewport: DESKTOP_VIEWPORT });
    try {
      const second = await other.newPage();
      await logIn(second, gateway.gateway.url, broke, PASSWORD);
      await openNav(second, 'Playground');
      await second.getByLabel('Message', { exact: true }).fill('Hello');
      await second.getByRole('button', { name: 'Send' }).click();
      const noCredit = second.getByRole('alert').filter({ hasText: 'The API refused this request' });
      await noCredit.waitFor();
      expect(await noCredit.textContent()).toContain('403 insufficient_balance');
      expect(await noCredit.textContent()).toContain('Insufficient balance: this request needs $');
      await inspect(second, 'playground-refused-no-credit');
    } finally {
      await other.close();
    }
    expect(await gateway.gateway.storage.usage.listPage(brokeId, 10, undefined, {})).toEqual([]);
  });

  it('needs the session and its CSRF token, refuses bad input, and keeps the playground key unrevocable', async () => {
    const client = new DashboardClient(gateway.gateway.url);
    await client.login(email, PASSWORD);
    const body = { model: 'beta-5.4', messages: [{ role: 'user', content: 'Hi' }] };
    const before = (await gateway.gateway.storage.billing.balance(accountId))!.balanceNano;
    expect((await client.post('/api/playground/chat', body, { csrf: false })).json.error.code).toBe('csrf_failed');
    expect((await new DashboardClient(gateway.gateway.url).post('/api/playground/chat', body)).status).toBe(403);
    const empty = await client.post('/api/playground/chat', { model: 'beta-5.4', messages: [] });
    expect(empty.status).toBe(400);
    expect(empty.json.error).toMatchObject({ code: 'invalid_request', message: 'Write a message first.' });
    const unknown = await client.post('/api/playground/chat', { ...body, model: 'no-such-model' });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error.code).toBe('unknown_model');
    const hot = await client.post('/api/playground/chat', { ...body, temperature: 7 });
    expect(hot.status).toBe(400);
    expect(hot.json.error.field).toBe('temperature');
    expect((await gateway.gateway.storage.billing.balance(accountId))!.balanceNano).toBe(before);

    // The stream itself: OpenAI chunks, the last with usage and its exact cost.
    const streamed = await client.post('/api/playground/chat', body);
    expect(streamed.status).toBe(200);
    expect(streamed.headers.get('content-type')).toContain('text/event-stream');
    const chunks = streamed.text
      .split('\n')
      .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
      .map((line) => JSON.parse(line.slice(6)) as { usage?: { cost?: string; cost_nano_usd?: string } | null });
    const usage = chunks.at(-1)!.usage!;
    const record = await usageOf(accountId, streamed.headers.get('x-request-id')!);
    expect(usage.cost_nano_usd).toBe(record.costNano.toString());

    const keys = (await client.get('/api/keys')).json.keys as Array<{ id: string; kind: string; hint: string }>;
    const playgroundKey = keys.find((key) => key.kind === 'playground')!;
    expect(keys.filter((key) => key.kind === 'playground')).toHaveLength(1);
    expect(playgroundKey.hint).toBe('no secret');
    for (const action of ['revoke', 'rotate']) {
      const refused = await client.post(`/api/keys/${playgroundKey.id}/${action}`);
      expect(refused.status, action).toBe(400);
      expect(refused.json.error.message, action).toContain('The playground key cannot be');
    }
  });

  it('fits a phone screen', async () => {
    const phone = await launchChromium(PHONE_VIEWPORT);
    try {
      const mobile = await phone.context.newPage();
      await logIn(mobile, gateway.gateway.url, email, PASSWORD);
      await openNav(mobile, 'Playground');
      await mobile.getByLabel('Model', { exact: true }).selectOption('delta-r1');
      await send(mobile, 'A short note on bridges, please.');
      await mobile.getByRole('button', { name: 'View code' }).click();
      await mobile.getByRole('tablist', { name: 'Code language' }).waitFor();
      await inspect(mobile, 'phone-playground');
    } finally {
      await phone.close();
    }
  });

  it('left nothing clipped and no axe violation of any impact', () => {
    expect(problems).toEqual([]);
  });
});
