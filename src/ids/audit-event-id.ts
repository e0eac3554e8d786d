import { randomHex } from './random-hex.js';

let lastMs = -1;
let sequence = 0;

/**
 * `aud_` and 32 hex digits: 12 of the time in milliseconds, 4 of a sequence within that millisecond, 16 random.
 * The audit log lists events by (time, id); with this id, events one instance records in the same millisecond
 * list in the order they happened (a random id shuffled them), and ids stay unique across instances.
 */
export function nextAuditEventId(at: number): string {
  if (at === lastMs) sequence = (sequence + 1) & 0xffff;
  else {
    lastMs = at;
    sequence = 0;
  }
  return `aud_${at.toString(16).padStart(12, '0')}${sequence.toString(16).padStart(4, '0')}${randomHex(8)}`;
}
