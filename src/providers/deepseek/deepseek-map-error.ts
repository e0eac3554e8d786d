import { GatewayError } from '../../canonical/errors.js';
import { upstreamError, type UpstreamErrorDetails } from '../upstream-errors.js';

/**
 * A DeepSeek error reply as the client-facing gateway error (docs/protocols/wire-deepseek.md#errors). The statuses
 * follow the shared table (422 → invalid request, 503 "server busy" → unavailable, 429 → rate limited …) except 402:
 * DeepSeek's "Insufficient Balance" is about the **gateway's** DeepSeek account, so the client gets the same 502 as for
 * a refused credential, worded so the operator knows to top the account up — never the client's 402 or 429.
 */
export function deepSeekUpstreamError(details: UpstreamErrorDetails): GatewayError {
  if (details.status !== 402) return upstreamError(details);
  return new GatewayError(
    'upstream_auth_failed',
    `The gateway's ${details.vendorLabel} account has run out of balance (HTTP 402). This is not a problem with your API key or your balance; please contact the operator.`,
    details.vendorCode === undefined ? {} : { upstreamCode: details.vendorCode },
  );
}
