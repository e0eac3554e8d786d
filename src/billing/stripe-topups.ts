import type Stripe from 'stripe';
import { invalidRequest } from '../canonical/errors.js';
import type { BillingRepository } from '../storage/billing-types.js';
import type { AccountRecord, AccountRepository } from '../storage/types.js';
import { formatUsd, parseUsd, type NanoUsd } from './money.js';

/** Smallest and largest top-up through Checkout, in USD. */
export const STRIPE_MINIMUM_USD = '5';
export const STRIPE_MAXIMUM_USD = '1000';

const NANO_PER_CENT = 10_000_000n;

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string;
  /** Tests only: where the Stripe client sends API calls (a loopback stand-in for api.stripe.com). */
  api?: { host: string; port: number; protocol: 'http' | 'https' };
}

/** What a verified webhook event did. Only `credited` changed anything. */
export type WebhookOutcome =
  | { result: 'credited'; accountId: string; amountNano: NanoUsd; balanceNano: NanoUsd }
  | { result: 'duplicate'; accountId: string }
  | { result: 'ignored'; reason: string }
  | { result: 'unknown_account'; accountId: string | null };

export class StripeSignatureError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StripeSignatureError';
  }
}

/**
 * Balance top-ups through Stripe Checkout, with the official `stripe` package.
 * The secret key is used only to create Checkout sessions; webhooks are verified with the signing secret.
 * Each paid Checkout session is credited exactly once: the ledger entry's unique idempotency key is the
 * session id, written in the credit's own transaction, so a replayed event (or Stripe's retries, or the same
 * session reported by two events) finds it taken and changes nothing.
 */
export class StripeTopups {
  /**
   * The `stripe` package is large (~18 MB of RSS once loaded) and needed only when a top-up is started or a
   * webhook arrives, so it is imported on the first of those, not at start-up.
   */
  private client: Promise<Stripe> | undefined;

  constructor(
    private readonly settings: StripeSettings,
    private readonly billing: BillingRepository,
    private readonly accounts: AccountRepository,
    private readonly now: () => number = Date.now,
  ) {}

  private stripe(): Promise<Stripe> {
    this.client ??= import('stripe').then(
      ({ default: StripeClient }) =>
        new StripeClient(this.settings.secretKey, {
          maxNetworkRetries: 1,
          appInfo: { name: 'Tollgate' },
          ...this.settings.api,
        }),
    );
    return this.client;
  }

  /** `amountUsd` as nano-USD if it is a whole number of cents within the limits; otherwise the 400 saying why. */
  static parseAmount(amountUsd: string, field = 'amountUsd'): NanoUsd {
    let amount: NanoUsd;
    try {
      amount = parseUsd(amountUsd);
    } catch {
      throw invalidRequest(`'${field}' must be a USD amount such as "10.00".`, field);
    }
    if (amount % NANO_PER_CENT !== 0n) throw invalidRequest(`'${field}' must be a whole number of cents.`, field);
    if (amount < parseUsd(STRIPE_MINIMUM_USD) || amount > parseUsd(STRIPE_MAXIMUM_USD)) {
      throw invalidRequest(`'${field}' must be from ${STRIPE_MINIMUM_USD} to ${STRIPE_MAXIMUM_USD} USD.`, field);
    }
    return amount;
  }

  /**
   * A Checkout session paying `amountNano` into `payer.id` (an organisation; a personal one shares its person's
   * id), receipts to `payer.email`; returns the URL to send the browser to.
   */
  async createCheckout(
    account: Pick<AccountRecord, 'id' | 'email'>,
    amountNano: NanoUsd,
    returnBaseUrl: string,
  ): Promise<string> {
    const stripe = await this.stripe();
    const session = await stripe.checkout.sessions.create({
      mode: 'payment',
      client_reference_id: account.id,
      customer_email: account.email,
      metadata: { tollgate_account_id: account.id },
      line_items: [
        {
          quantity: 1,
          price_data: {
            currency: 'usd',
            unit_amount: Number(amountNano / NANO_PER_CENT),
            product_data: { name: `Tollgate prepaid balance ($${formatUsd(amountNano)})` },
          },
        },
      ],
      success_url: `${returnBaseUrl}/billing?checkout=success`,
      cancel_url: `${returnBaseUrl}/billing?checkout=cancelled`,
    });
    if (session.url === null) throw new Error(`Stripe returned Checkout session ${session.id} without a URL.`);
    return session.url;
  }

  /**
   * Verifies the signature over the raw body (throws StripeSignatureError when it does not match, is stale or
   * missing) and credits a paid Checkout session. Other event types are acknowledged and ignored.
   */
  async handleWebhook(rawBody: Buffer, signature: string | undefined): Promise<WebhookOutcome> {
    if (signature === undefined || signature === '')
      throw new StripeSignatureError('The stripe-signature header is missing.');
    const stripe = await this.stripe();
    let event: Stripe.Event;
    try {
      event = await stripe.webhooks.constructEventAsync(rawBody, signature, this.settings.webhookSecret);
    } catch (error) {
      throw new StripeSignatureError(error instanceof Error ? error.message : 'The signature does not match.');
    }
    if (event.type !== 'checkout.session.completed' && event.type !== 'checkout.session.async_payment_succeeded') {
      return { result: 'ignored', reason: `event type ${event.type}` };
    }
    const session = event.data.object;
    // `completed` with an asynchronous payment method is not paid yet; `async_payment_succeeded` follows when it is.
    if (session.payment_status !== 'paid')
      return { result: 'ignored', reason: `payment status ${session.payment_status}` };
    if (session.currency !== 'usd' || session.amount_total === null || session.amount_total <= 0) {
      return { result: 'ignored', reason: `amount ${session.amount_total ?? 'none'} ${session.currency ?? ''}` };
    }
    const accountId = session.client_reference_id ?? session.metadata?.tollgate_account_id ?? null;
    const account = accountId === null ? null : await this.accounts.findById(accountId);
    if (account === null) return { result: 'unknown_account', accountId };
    const amountNano = BigInt(session.amount_total) * NANO_PER_CENT;
    const credit = await this.billing.credit({
      accountId: account.id,
      kind: 'topup',
      amountNano,
      idempotencyKey: `stripe:checkout:${session.id}`,
      note: `Stripe Checkout ${session.id}`,
      at: this.now(),
    });
    if (!credit.applied) return { result: 'duplicate', accountId: account.id };
    return { result: 'credited', accountId: account.id, amountNano, balanceNano: credit.balanceNano };
  }
}
