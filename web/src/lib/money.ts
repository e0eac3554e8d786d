/**
 * Display formatting of the API's exact decimal USD strings ("12.5", "0.000123", "-3"). Hand-written on BigInt
 * nano-USD (1e-9) because amounts must never pass through floating point; Intl.NumberFormat would take a Number.
 */

const NANO_DIGITS = 9;
const NANO = 10n ** BigInt(NANO_DIGITS);

/** Exact nano-USD of a decimal USD string; extra digits beyond nano precision are truncated. */
export function toNano(usd: string): bigint {
  const match = /^\s*(-?)(\d*)(?:\.(\d*))?\s*$/.exec(usd);
  if (match === null || (match[2] === '' && (match[3] ?? '') === '')) throw new Error(`Not a decimal amount: '${usd}'`);
  const whole = BigInt(match[2] === '' ? '0' : match[2]!);
  const fraction = BigInt(((match[3] ?? '') + '0'.repeat(NANO_DIGITS)).slice(0, NANO_DIGITS));
  const magnitude = whole * NANO + fraction;
  return match[1] === '-' ? -magnitude : magnitude;
}

/** Valid input for an amount field: digits with at most 2 decimals (cents), positive. */
export function isCentsAmount(text: string): boolean {
  return /^\d{1,7}(\.\d{1,2})?$/.test(text.trim()) && toNano(text) > 0n;
}

function groupThousands(digits: string): string {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Rounds half away from zero to `decimals` places and renders "$1,234.56" / "-$0.01". */
function render(nano: bigint, decimals: number, minDecimals: number): string {
  const negative = nano < 0n;
  let magnitude = negative ? -nano : nano;
  const step = 10n ** BigInt(NANO_DIGITS - decimals);
  magnitude = ((magnitude + step / 2n) / step) * step;
  const whole = magnitude / NANO;
  let fraction = (magnitude % NANO).toString().padStart(NANO_DIGITS, '0').slice(0, decimals);
  while (fraction.length > minDecimals && fraction.endsWith('0')) fraction = fraction.slice(0, -1);
  const text = `$${groupThousands(whole.toString())}${fraction === '' ? '' : `.${fraction}`}`;
  return negative && magnitude !== 0n ? `-${text}` : text;
}

/** A balance or total: cents ("$12.35"). */
export function formatUsd(usd: string): string {
  return render(toNano(usd), 2, 2);
}

/**
 * A cost that may be a fraction of a cent (one request): cents when at least a cent, otherwise up to
 * 6 decimals so "$0.000123" stays visible instead of rounding to "$0.00".
 */
export function formatCost(usd: string): string {
  const nano = toNano(usd);
  const magnitude = nano < 0n ? -nano : nano;
  if (nano === 0n) return '$0.00';
  if (magnitude >= 10_000_000n) return render(nano, 2, 2);
  return render(nano, 6, 2);
}

/** Sum of decimal USD strings, as a decimal USD string (exact). */
export function sumUsd(values: readonly string[]): string {
  return fromNano(values.reduce((total, value) => total + toNano(value), 0n));
}

/** Decimal USD string of nano-USD, trailing zeros dropped. */
export function fromNano(nano: bigint): string {
  const negative = nano < 0n;
  const magnitude = negative ? -nano : nano;
  const fraction = (magnitude % NANO).toString().padStart(NANO_DIGITS, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${magnitude / NANO}${fraction === '' ? '' : `.${fraction}`}`;
}

/** For chart geometry only (bar heights): a Number is fine there, never for the figures shown. */
export function toChartNumber(usd: string): number {
  return Number(toNano(usd)) / 1e9;
}
