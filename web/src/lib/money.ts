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

/**
 * The money rule of the dashboard's accounting (ledger rows, a request's cost, usage tables; summaries use
 * `formatUsdCents`): amounts are shown exactly, never rounded. Whole cents show two decimals ("$12.30", "-$1.68"); an amount with
 * fractions of a cent shows its digits up to the last non-zero one ("$0.000123", "$3.094512", at most 9 decimals:
 * the gateway counts nano-dollars). So every running balance adds up on screen: $4.77 − $1.676 = $3.094.
 * Thousands are grouped ("$1,234.50").
 */
export function formatUsd(usd: string): string {
  const nano = toNano(usd);
  const negative = nano < 0n;
  const magnitude = negative ? -nano : nano;
  let fraction = (magnitude % NANO).toString().padStart(NANO_DIGITS, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${negative ? '-' : ''}$${groupThousands((magnitude / NANO).toString())}.${fraction}`;
}

const CENT = NANO / 100n;

/**
 * Summaries (a balance, a spend card, a list of accounts) show the amount to the cent, rounded half away from zero:
 * "$4.99" for 4.98984, "$1,234.57". An amount that is not zero but rounds to it reads "<$0.01" (or "-<$0.01"), never
 * a misleading "$0.00". The exact figure goes in the element's title, and accounting (the ledger, a request's
 * details, the usage tables) keeps `formatUsd`.
 */
export function formatUsdCents(usd: string): string {
  const nano = toNano(usd);
  const negative = nano < 0n;
  const magnitude = negative ? -nano : nano;
  const sign = negative ? '-' : '';
  const cents = (magnitude + CENT / 2n) / CENT;
  if (cents === 0n && magnitude > 0n) return `${sign}<$0.01`;
  const fraction = (cents % 100n).toString().padStart(2, '0');
  return `${cents === 0n ? '' : sign}$${groupThousands((cents / 100n).toString())}.${fraction}`;
}

/** A cost (one request, a day, a model): the same rule as every other amount (see `formatUsd`). */
export const formatCost = formatUsd;

/**
 * Chart axis ticks: every tick of one axis with the same number of decimals, the fewest that tell the ticks apart
 * (so "$0.00, $0.05, $0.10", or "$0.0000, $0.0005, $0.0010"). Geometry only: the exact figures are in tooltips.
 */
export function axisUsdFormatter(ticks: readonly number[]): (value: number) => string {
  const step = ticks.length > 1 ? Math.abs(ticks[1]! - ticks[0]!) : Math.abs(ticks[0] ?? 0);
  const decimals = Math.min(9, Math.max(2, decimalsOf(step)));
  return (value: number) =>
    `$${value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals })}`;
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

/** Decimals that show `step` exactly: 0.0025 → 4, 0.5 → 1, 5 → 0. */
export function decimalsOf(step: number): number {
  const text = step.toFixed(9).replace(/0+$/, '');
  const dot = text.indexOf('.');
  return dot === -1 || dot === text.length - 1 ? 0 : text.length - dot - 1;
}
