import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStorage } from '../storage/open-storage.js';
import type { AccountRecord, Storage } from '../storage/types.js';
import { parseUsd } from './money.js';
import { StripeTopups } from './stripe-topups.js';

let directory: string;
let storage: Storage;
let account: AccountRecord;
/** A loopback stand-in for api.stripe.com: records what the real `stripe` client sends, answers like Stripe. */
let stripeApi: Server;
const received: Array<{ method: string; url: string; authorization: string | undefined; body: URLSearchParams }> = [];

beforeAll(async () => {
  directory = mkdtempSync(join(tmpdir(), 'tollgate-stripe-'));
  storage = await openStorage(`sqlite:${join(directory, 'db.sqlite')}`);
  await storage.migrate();
  account = await storage.accounts.create({
    id: 'acct_pay',
    email: 'payer@example.com',
    passwordHash: 'x',
    role: 'user',
    tier: 'standard',
    createdAt: 0,
  });
  stripeApi = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    request.on('end', () => {
      received.push({
        method: request.method!,
        url: request.url!,
        authorization: request.headers.authorization,
        body: new URLSearchParams(body),
      });
      response.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_test' });
      response.end(
        JSON.stringify({
          id: 'cs_test_123',
          object: 'checkout.session',
          url: 'https://checkout.stripe.com/c/pay/cs_test_123',
        }),
      );
    });
  });
  stripeApi.listen(0, '127.0.0.1');
  await once(stripeApi, 'listening');
});

afterAll(async () => {
  stripeApi?.close();
  await storage?.close();
  rmSync(directory, { recursive: true, force: true });
});

function topups(): StripeTopups {
  const address = stripeApi.address() as { port: number };
  return new StripeTopups(
    {
      secretKey: 'sk_test_unit',
      webhookSecret: 'whsec_unit',
      api: { host: '127.0.0.1', port: address.port, protocol: 'http' },
    },
    storage.billing,
    storage.organisations,
  );
}

describe('StripeTopups', () => {
  it('accepts whole cents from the minimum to the maximum only', () => {
    expect(StripeTopups.parseAmount('10.00')).toBe(parseUsd('10'));
    expect(StripeTopups.parseAmount('5')).toBe(parseUsd('5'));
    expect(StripeTopups.parseAmount('1000')).toBe(parseUsd('1000'));
    for (const bad of ['4.99', '1000.01', '10.005', 'ten', '', '1e3'])
      expect(() => StripeTopups.parseAmount(bad)).toThrow(/amountUsd/);
  });

  it('creates a Checkout session for the account, in USD cents, with return URLs', async () => {
    const url = await topups().createCheckout(
      { organisationId: account.id, email: account.email },
      parseUsd('12.34'),
      'https://gateway.example.com',
    );
    expect(url).toBe('https://checkout.stripe.com/c/pay/cs_test_123');
    const call = received.at(-1)!;
    expect(call.method).toBe('POST');
    expect(call.url).toBe('/v1/checkout/sessions');
    expect(call.authorization).toBe('Bearer sk_test_unit');
    expect(Object.fromEntries(call.body)).toMatchObject({
      mode: 'payment',
      client_reference_id: 'acct_pay',
      customer_email: 'payer@example.com',
      'metadata[tollgate_account_id]': 'acct_pay',
      'line_items[0][quantity]': '1',
      'line_items[0][price_data][currency]': 'usd',
      'line_items[0][price_data][unit_amount]': '1234',
      success_url: 'https://gateway.example.com/billing?checkout=success',
      cancel_url: 'https://gateway.example.com/billing?checkout=cancelled',
    });
    // Creating a session moves no money: only the webhook credits.
    expect((await storage.billing.balance('acct_pay'))!.balanceNano).toBe(0n);
  });
});
