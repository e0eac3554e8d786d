import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { forbiddenAddressReason, type AddressPolicy } from './address-policy.js';

/** Resolves a host name to all of its addresses (node's resolver by default; tests pass their own). */
export type ResolveAll = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolveAll: ResolveAll = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

/** A host name that resolved to an address a webhook may not reach. */
export class ForbiddenDestinationError extends Error {
  readonly code = 'ERR_WEBHOOK_FORBIDDEN_DESTINATION';
  constructor(message: string) {
    super(message);
    this.name = 'ForbiddenDestinationError';
  }
}

/** Every address of `hostname`, once each has passed the policy; any one forbidden refuses them all. */
export async function checkedAddresses(
  hostname: string,
  policy: AddressPolicy,
  resolveAll: ResolveAll = systemResolveAll,
): Promise<LookupAddress[]> {
  const addresses = await resolveAll(hostname);
  if (addresses.length === 0) throw new ForbiddenDestinationError(`${hostname} resolved to no address`);
  for (const { address } of addresses) {
    const reason = forbiddenAddressReason(address, policy);
    // All or nothing: a name with one private address among public ones is refused outright, so round-robin
    // resolution cannot land a later connection on the private one.
    if (reason !== null) throw new ForbiddenDestinationError(`${hostname} resolves to ${reason}`);
  }
  return addresses;
}

/**
 * The `lookup` of the webhook connections (undici `connect.lookup`, handed to net/tls.connect): the socket
 * connects to the very addresses checked here, so a DNS answer that changes between a check and the connection
 * (rebinding) cannot swap a private address in.
 */
export function guardedLookup(policy: AddressPolicy, resolveAll: ResolveAll = systemResolveAll): LookupFunction {
  return (hostname, options, callback) => {
    checkedAddresses(hostname, policy, resolveAll).then(
      (addresses) => {
        const family = options.family === 4 || options.family === 6 ? options.family : undefined;
        const wanted = family === undefined ? addresses : addresses.filter((entry) => entry.family === family);
        if (wanted.length === 0) {
          callback(new ForbiddenDestinationError(`${hostname} has no IPv${family} address`), '', 0);
          return;
        }
        // net asks for every address when it races families (autoSelectFamily), one otherwise.
        if (options.all === true) (callback as (error: null, addresses: LookupAddress[]) => void)(null, wanted);
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
