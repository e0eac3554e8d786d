/**
 * Money is integer nano-USD (1e-9 USD) as bigint, end to end: every listed price is exact in this unit
 * ($0.14 per 1M tokens = 140 nano-USD per token) and no float ever touches an amount.
 */
export type NanoUsd = bigint;

export const NANO_PER_USD = 1_000_000_000n;

const USD_PATTERN = /^(\d{1,12})(?:\.(\d{1,9}))?$/;

/** "12.5" → 12_500_000_000n. Decimal strings only (at most 9 decimals), so no binary float is ever parsed. */
export function parseUsd(text: string): NanoUsd {
  const match = USD_PATTERN.exec(text.trim());
  if (match === null) throw new RangeError(`'${text}' is not a USD amount (digits, at most 9 decimals).`);
  const whole = BigInt(match[1]!);
  const fraction = BigInt((match[2] ?? '').padEnd(9, '0'));
  return whole * NANO_PER_USD + fraction;
}

/** 12_500_000_000n → "12.5"; exact, trailing zeros trimmed, at least one decimal digit kept off ("12"). */
export function formatUsd(amount: NanoUsd): string {
  const negative = amount < 0n;
  const absolute = negative ? -amount : amount;
  const whole = absolute / NANO_PER_USD;
  const fraction = (absolute % NANO_PER_USD).toString().padStart(9, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction === '' ? '' : `.${fraction}`}`;
}

/**
 * An amount in a sentence for a person, by the dashboard's one money rule (web/src/lib/money.ts): exact, two
 * decimals for whole cents, more only when the amount has them. 4_000_000_000n → "$4.00"; 1_234_500n → "$0.0012345".
 */
export function describeUsd(amount: NanoUsd): string {
  const text = formatUsd(amount < 0n ? -amount : amount);
  const [whole, fraction = ''] = text.split('.');
  return `${amount < 0n ? '-' : ''}$${whole}.${fraction.padEnd(2, '0')}`;
}

/**
 * How many of `wanted` units at `priceNano` each `moneyNano` pays for, in whole units: all of them at a price of 0,
 * none when there is no money. The one rule behind settling tokens, granting output slices and holding searches.
 */
export function affordableUnits(wanted: number, priceNano: NanoUsd, moneyNano: NanoUsd): number {
  if (priceNano === 0n) return wanted;
  if (moneyNano <= 0n) return 0;
  const units = moneyNano / priceNano;
  return units < BigInt(wanted) ? Number(units) : wanted;
}
