import { describe, expect, it } from 'vitest';
import { GatewayError } from '../canonical/errors.js';
import type { BillingRepository, RedeemResult } from '../storage/billing-types.js';
import {
  createRedemptionCodes,
  generateRedemptionCode,
  hashRedemptionCode,
  normalizeRedemptionCode,
  redeemCode,
} from './redemption-codes.js';

const CODE_PATTERN = /^TG-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;

/** Only the two methods the module uses; the rest would throw if touched. */
function fakeBilling(store = new Map<string, { amountNano: bigint; redeemedBy: string | null }>()) {
  const billing = {
    async createRedemptionCodes(codes: ReadonlyArray<{ codeHash: string; amountNano: bigint }>) {
      for (const code of codes) store.set(code.codeHash, { amountNano: code.amountNano, redeemedBy: null });
    },
    async redeem(codeHash: string, accountId: string): Promise<RedeemResult> {
      const entry = store.get(codeHash);
      if (entry === undefined) return { redeemed: false, reason: 'unknown_code' };
      if (entry.redeemedBy !== null) return { redeemed: false, reason: 'already_redeemed' };
      entry.redeemedBy = accountId;
      return { redeemed: true, amountNano: entry.amountNano, balanceNano: entry.amountNano };
    },
  } as unknown as BillingRepository;
  return { billing, store };
}

describe('redemption codes', () => {
  it('generates TG-XXXX-XXXX-XXXX-XXXX codes in Crockford base32, 80 random bits each', () => {
    const codes = Array.from({ length: 2000 }, generateRedemptionCode);
    for (const code of codes) expect(code).toMatch(CODE_PATTERN);
    expect(new Set(codes).size).toBe(codes.length);
    // Every one of the 32 symbols turns up in every position over 2000 codes: the whole alphabet is in use.
    const positions = Array.from({ length: 16 }, () => new Set<string>());
    for (const code of codes)
      [...code.slice(3).replaceAll('-', '')].forEach((character, index) => {
        positions[index]!.add(character);
      });
    for (const seen of positions) expect(seen.size).toBe(32);
  });

  it('normalises what people type: case, spaces, dashes, the prefix and look-alike letters', () => {
    const code = 'TG-7K3M-Q0P1-ZZ9A-B4CD';
    expect(normalizeRedemptionCode(code)).toBe(code);
    expect(normalizeRedemptionCode('tg-7k3m-q0p1-zz9a-b4cd')).toBe(code);
    expect(normalizeRedemptionCode('  TG 7K3M Q0P1 ZZ9A B4CD \n')).toBe(code);
    expect(normalizeRedemptionCode('TG7K3MQ0P1ZZ9AB4CD')).toBe(code);
    expect(normalizeRedemptionCode('7K3M-Q0P1-ZZ9A-B4CD')).toBe(code);
    expect(normalizeRedemptionCode('TG-7K3M-QOPI-ZZ9A-B4CD')).toBe(code);
    expect(normalizeRedemptionCode('TG-7K3M-Q0Pl-ZZ9A-B4CD')).toBe(code);
    expect(normalizeRedemptionCode('TG--7K3M__Q0P1-ZZ9A-B4CD')).toBe(code);
    expect(hashRedemptionCode(normalizeRedemptionCode('tg 7k3m q0p1 zz9a b4cd')!)).toBe(hashRedemptionCode(code));
  });

  it('rejects text that cannot be a code', () => {
    for (const input of [
      '',
      'TG-',
      'TG-7K3M-Q0P1-ZZ9A',
      'TG-7K3M-Q0P1-ZZ9A-B4CD-EEEE',
      'TG-7K3M-Q0P1-ZZ9A-B4CU',
      'TG-7K3M-Q0P1-ZZ9A-B4C!',
      'XX-7K3M-Q0P1-ZZ9A-B4CD',
    ]) {
      expect(normalizeRedemptionCode(input), input).toBeNull();
    }
  });

  it('hashes as hex SHA-256 of the canonical form', () => {
    expect(hashRedemptionCode('TG-0000-0000-0000-0000')).toMatch(/^[0-9a-f]{64}$/);
    expect(hashRedemptionCode('TG-0000-0000-0000-0000')).not.toBe(hashRedemptionCode('TG-0000-0000-0000-0001'));
  });

  it('stores only hashes, and a code redeems once', async () => {
    const { billing, store } = fakeBilling();
    const codes = await createRedemptionCodes(billing, 5_000_000_000n, 3, 0);
    expect(codes).toHaveLength(3);
    expect([...store.keys()].sort()).toEqual(codes.map(hashRedemptionCode).sort());
    for (const code of codes)
      expect(
        JSON.stringify([...store.entries()].map(([hash, value]) => [hash, String(value.amountNano)])),
      ).not.toContain(code);

    await expect(redeemCode(billing, codes[0]!.toLowerCase(), 'acct_a', 1)).resolves.toEqual({
      amountNano: 5_000_000_000n,
      balanceNano: 5_000_000_000n,
    });
    const again = await redeemCode(billing, codes[0]!, 'acct_b', 2).catch((error: unknown) => error);
    expect(again).toBeInstanceOf(GatewayError);
    expect(again).toMatchObject({
      code: 'conflict',
      status: 409,
      message: 'This redemption code has already been redeemed.',
    });
    const unknown = await redeemCode(billing, 'TG-0000-0000-0000-0000', 'acct_a', 3).catch((error: unknown) => error);
    expect(unknown).toMatchObject({ code: 'not_found', status: 404, message: 'This redemption code does not exist.' });
    const malformed = await redeemCode(billing, 'hello', 'acct_a', 3).catch((error: unknown) => error);
    expect(malformed).toMatchObject({ code: 'invalid_request', status: 400, param: 'code' });
  });

  it('refuses worthless codes and batch sizes outside 1..1000', async () => {
    const { billing } = fakeBilling();
    await expect(createRedemptionCodes(billing, 0n, 1, 0)).rejects.toMatchObject({ param: 'usd' });
    await expect(createRedemptionCodes(billing, 1n, 0, 0)).rejects.toMatchObject({ param: 'count' });
    await expect(createRedemptionCodes(billing, 1n, 1001, 0)).rejects.toMatchObject({ param: 'count' });
    await expect(createRedemptionCodes(billing, 1n, 1000, 0)).resolves.toHaveLength(1000);
  });
});
