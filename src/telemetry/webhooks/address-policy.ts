import { BlockList, isIP } from 'node:net';

/**
 * Addresses an outbound webhook may never reach: private, shared (CGNAT), link-local, unique-local, loopback,
 * multicast, documentation and reserved ranges. A user- or operator-set URL must not become a way into the
 * gateway's own network (cloud metadata at 169.254.169.254, an admin port on 10.x).
 */
const FORBIDDEN = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  FORBIDDEN.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  // IPv4-compatible (deprecated) and the unspecified address; IPv4-mapped ones are checked as IPv4 below.
  ['::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  FORBIDDEN.addSubnet(network, prefix, 'ipv6');

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** IPv6 prefixes that carry an IPv4 address in their last 32 bits: IPv4-mapped and the NAT64 well-known prefix. */
const EMBEDS_IPV4 = new BlockList();
EMBEDS_IPV4.addSubnet('::ffff:0:0', 96, 'ipv6');
EMBEDS_IPV4.addSubnet('64:ff9b::', 96, 'ipv6');

export interface AddressPolicy {
  /** Loopback addresses are allowed (http:// receivers on this machine, for testing). */
  allowLoopback: boolean;
}

/** Why an IP address may not be reached, or null when it may. Anything that is not an IP address is refused. */
export function forbiddenAddressReason(address: string, policy: AddressPolicy): string | null {
  const version = isIP(address);
  if (version === 0) return `${address} is not an IP address`;
  if (version === 6) {
    const embedded = embeddedIpv4(address);
    if (embedded !== null) {
      const reason = forbiddenAddressReason(embedded, policy);
      return reason === null ? null : `${address} embeds ${embedded}: ${reason}`;
    }
  }
  const family = version === 4 ? 'ipv4' : 'ipv6';
  if (LOOPBACK.check(address, family)) return policy.allowLoopback ? null : `${address} is a loopback address`;
  if (FORBIDDEN.check(address, family)) return `${address} is on a private, local or reserved network`;
  return null;
}

export function isLoopbackAddress(address: string): boolean {
  const version = isIP(address);
  if (version === 0) return false;
  const embedded = version === 6 ? embeddedIpv4(address) : null;
  if (embedded !== null) return LOOPBACK.check(embedded, 'ipv4');
  return LOOPBACK.check(address, version === 4 ? 'ipv4' : 'ipv6');
}

/** The IPv4 address in the last 32 bits of an IPv4-mapped or NAT64 IPv6 address; null for any other. */
function embeddedIpv4(address: string): string | null {
  if (!EMBEDS_IPV4.check(address, 'ipv6')) return null;
  // The URL parser writes an IPv6 address in its canonical form, whatever form it was given in (`::ffff:1.2.3.4`,
  // `0:0:0:0:0:ffff:102:304`): its last two groups are then the IPv4 address's two halves.
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const groups = canonical.split(':');
  const high = Number.parseInt(groups[groups.length - 2] ?? '0', 16) || 0;
  const low = Number.parseInt(groups[groups.length - 1] ?? '0', 16) || 0;
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.');
}
