import { isIP } from 'node:net';
import { forbiddenAddressReason, isLoopbackAddress } from './address-policy.js';

export interface WebhookUrlPolicy {
  /**
   * `http://` is accepted to a loopback host (127.0.0.0/8, ::1, localhost), and loopback addresses are reachable:
   * a receiver on the same machine, for testing (WEBHOOK_ALLOW_HTTP_LOOPBACK). Off, only `https://` to public
   * addresses is.
   */
  allowHttpLoopback: boolean;
}

/** Host names that name this machine whatever the resolver says. */
const LOOPBACK_NAMES = new Set(['localhost', 'localhost.']);

/**
 * Why a webhook URL is refused before any connection, or null when it passes: the scheme, credentials in the URL,
 * and a literal address (which the connection's resolver never sees, so it is checked here). A host name is checked
 * again on every connection, address by address, by the guarded lookup.
 */
export function webhookUrlProblem(text: string, policy: WebhookUrlPolicy): string | null {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute https:// URL';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry credentials (the signature authenticates)';
  const host = hostOf(url);
  const loopbackHost = LOOPBACK_NAMES.has(host.toLowerCase()) || isLoopbackAddress(host);
  if (url.protocol === 'http:') {
    if (!policy.allowHttpLoopback) return 'must be https:// (http:// only to a loopback address, for testing)';
    if (!loopbackHost) return 'must be https:// (http:// is allowed only to a loopback address)';
  } else if (url.protocol !== 'https:') {
    return 'must be an https:// URL';
  }
  if (isIP(host) !== 0) {
    const reason = forbiddenAddressReason(host, { allowLoopback: policy.allowHttpLoopback });
    if (reason !== null) return `must not point at ${reason}`;
  } else if (LOOPBACK_NAMES.has(host.toLowerCase()) && !policy.allowHttpLoopback) {
    return 'must not point at this machine (localhost)';
  }
  return null;
}

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}
