import { isUtf8 } from 'node:buffer';
import type { ClientJsonBody } from '../canonical/client-json-body.js';
import type { CanonicalRequest, ClientProtocol } from '../canonical/request.js';
import { topLevelMembers } from '../wire/json-object-members.js';

/**
 * The vendor's request body as sent: `JSON.stringify(body)`, or, when the client's own body is at hand and the
 * vendor body repeats some of its top-level members unchanged (a same-format route: the prompt, the tools), the
 * client's bytes of those members with the others serialised beside them. Either way the vendor parses the same
 * value: a member is reused only when its parsed value equals the vendor's member, the bytes are valid UTF-8, and
 * every number in them is in JSON.stringify's form (`topLevelMembers`). Only the order of keys may differ. Reusing
 * saves serialising and UTF-8 encoding a long prompt again (decision 0022).
 */
export function vendorJsonBody(body: Record<string, unknown>, client: ClientJsonBody | undefined): string | Buffer {
  return (client === undefined ? undefined : reusingClientBytes(body, client)) ?? JSON.stringify(body);
}

/**
 * The client's body when it was written in `wire`, the vendor's format: a translated body shares no large member
 * with its client's, so it is not searched for one.
 */
export function sameFormatClientBody(
  request: Pick<CanonicalRequest, 'clientBody' | 'extensionsProtocol'>,
  wire: ClientProtocol,
): ClientJsonBody | undefined {
  return request.extensionsProtocol === wire ? request.clientBody : undefined;
}

const OPEN = Buffer.from('{');
const CLOSE = Buffer.from('}');
const SEPARATOR = Buffer.from(',');

function reusingClientBytes(body: Record<string, unknown>, client: ClientJsonBody): Buffer | undefined {
  const reused = new Set<string>();
  for (const key of Object.keys(body)) {
    if (Object.hasOwn(client.value, key) && sameJsonValue(body[key], client.value[key])) reused.add(key);
  }
  if (reused.size === 0) return undefined;
  const bytes = Buffer.from(client.bytes.buffer, client.bytes.byteOffset, client.bytes.byteLength);
  if (!isUtf8(bytes)) return undefined;
  const members = topLevelMembers(bytes);
  if (members === undefined) return undefined;
  const parts: Buffer[] = [OPEN];
  for (const member of members) {
    if (!reused.has(member.key)) continue;
    if (parts.length > 1) parts.push(SEPARATOR);
    parts.push(bytes.subarray(member.start, member.end));
  }
  let rest = '';
  for (const key of Object.keys(body)) {
    const value = body[key];
    if (reused.has(key) || value === undefined) continue;
    rest += `${rest === '' && parts.length === 1 ? '' : ','}${JSON.stringify(key)}:${JSON.stringify(value)}`;
  }
  if (rest !== '') parts.push(Buffer.from(rest));
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

/**
 * Whether `sent` (a value of the vendor body) serialises to what `received` (parsed from the client's JSON) was
 * read from. Plain data only: anything JSON.stringify would write in its own way (a `toJSON`, a function, an
 * undefined array item, a non-finite number) answers false, and that member is serialised as before.
 */
function sameJsonValue(sent: unknown, received: unknown): boolean {
  if (sent === null || typeof sent !== 'object') {
    return sent === received && (typeof sent !== 'number' || Number.isFinite(sent));
  }
  if (received === null || typeof received !== 'object') return false;
  if (Array.isArray(sent)) {
    if (!Array.isArray(received) || sent.length !== received.length) return false;
    for (let index = 0; index < sent.length; index++) {
      if (!sameJsonValue(sent[index], received[index])) return false;
    }
    return true;
  }
  if (Array.isArray(received)) return false;
  const prototype: unknown = Object.getPrototypeOf(sent);
  if (prototype !== Object.prototype && prototype !== null) return false;
  const sentObject = sent as Record<string, unknown>;
  const receivedObject = received as Record<string, unknown>;
  let present = 0;
  for (const key of Object.keys(sentObject)) {
    const value = sentObject[key];
    if (value === undefined) continue;
    if (!Object.hasOwn(receivedObject, key) || !sameJsonValue(value, receivedObject[key])) return false;
    present++;
  }
  return present === Object.keys(receivedObject).length;
}
