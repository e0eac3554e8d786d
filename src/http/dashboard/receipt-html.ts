import { createHash } from 'node:crypto';
import { describeUsd } from '../../billing/money.js';
import type { ReceiptEntry } from '../../storage/audit-types.js';
import type { OrganisationRecord } from '../../storage/organisation-types.js';

/** Ledger kinds that are a payment, and so have a receipt: top-ups, redeemed codes, tier purchases. */
const RECEIPT_KINDS = new Set(['topup', 'redemption', 'tier']);

export function hasReceipt(entry: ReceiptEntry): boolean {
  return RECEIPT_KINDS.has(entry.kind);
}

/**
 * The receipt number: the ledger entry's date and its random part (`le_<time>_<hex>`), so it is unique, stable
 * across prints, and needs no counter of its own.
 */
export function receiptNumber(entry: ReceiptEntry): string {
  const random = /_([0-9a-f]+)$/.exec(entry.id)?.[1] ?? createHash('sha256').update(entry.id).digest('hex');
  return `TG-${new Date(entry.createdAt).toISOString().slice(0, 10).replaceAll('-', '')}-${random.slice(0, 12).toUpperCase()}`;
}

/** How it was paid, in words. */
export function paymentMethod(entry: ReceiptEntry): string {
  if (entry.kind === 'redemption') return 'Prepaid code';
  if (entry.kind === 'tier') return 'Tier purchase, paid from the prepaid balance';
  return entry.idempotencyKey.startsWith('stripe:checkout:')
    ? 'Card payment (Stripe Checkout)'
    : 'Credit by the operator';
}

// Print CSS in the page itself: the receipt is one self-contained document, printable or savable as PDF.
const STYLE = `
:root { color: #111; background: #fff; font: 16px/1.5 system-ui, sans-serif; }
body { margin: 0; }
main { max-width: 44rem; margin: 0 auto; padding: 2rem 1.25rem; }
h1 { font-size: 1.6rem; margin: 0 0 0.25rem; }
.number { color: #333; margin: 0 0 1.5rem; }
h2 { font-size: 1rem; margin: 1.5rem 0 0.25rem; }
address { font-style: normal; white-space: pre-line; overflow-wrap: anywhere; }
table { width: 100%; border-collapse: collapse; margin-top: 1.5rem; }
caption { text-align: left; color: #333; padding-bottom: 0.5rem; }
th, td { text-align: left; padding: 0.5rem 0.25rem; border-bottom: 1px solid #999; vertical-align: top; }
th { width: 40%; font-weight: 600; }
td { overflow-wrap: anywhere; }
.total td, .total th { font-size: 1.2rem; border-bottom: 2px solid #111; }
.hint { color: #333; margin-top: 2rem; font-size: 0.9rem; }
@media print { main { padding: 0; max-width: none; } .hint { display: none; } @page { margin: 2cm; } }
`;

/** The one style element, allowed by its hash: the page runs no script and loads nothing. */
export const RECEIPT_CONTENT_SECURITY_POLICY = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;

export function receiptHtml(entry: ReceiptEntry, organisation: OrganisationRecord): string {
  const number = receiptNumber(entry);
  const paid = entry.amountNano < 0n ? -entry.amountNano : entry.amountNano;
  const billedTo = organisation.billingName ?? organisation.name;
  const when = new Date(entry.createdAt).toISOString().replace('T', ' ').slice(0, 19);
  const rows: Array<[string, string]> = [
    ['Date (UTC)', when],
    ['Payment method', paymentMethod(entry)],
    ...(entry.kind === 'tier' && entry.note !== null ? [['Description', entry.note] as [string, string]] : []),
    ['Ledger entry', entry.id],
    ['Receipt number', number],
  ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Receipt ${escapeHtml(number)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<h1>Receipt</h1>
<p class="number">${escapeHtml(number)}</p>
<h2>Billed to</h2>
<p class="billed-name">${escapeHtml(billedTo)}</p>
${organisation.billingAddress === null ? '' : `<address>${escapeHtml(organisation.billingAddress)}</address>`}
<table>
<caption>Payment to Tollgate prepaid balance of organisation ${escapeHtml(organisation.name)}</caption>
<tbody>
${rows.map(([label, value]) => `<tr><th scope="row">${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`).join('\n')}
<tr class="total"><th scope="row">Amount (USD)</th><td class="amount">${escapeHtml(describeUsd(paid))}</td></tr>
</tbody>
</table>
<p class="hint">Print this page or save it as PDF from your browser's print dialog.</p>
</main>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}
