import type { CanonicalEvent } from '../../src/canonical/events.js';
import { OutputGate } from '../../src/pipeline/output-gate.js';

/**
 * An output gate on a hold of `granted` output tokens whose account has `affordable` more, granted as
 * planSliceGrant grants them: a whole slice all or nothing, any other as much of it as is left. `calls` are the
 * tokens of each slice asked for: the storage calls a reply made.
 */
export function gateOnHold(granted: number, affordable: number, limit = 100_000, slice = 100) {
  const hold = { granted, affordable, calls: [] as number[] };
  const gate = new OutputGate(
    () => hold.granted,
    limit,
    slice,
    async (tokens, whole) => {
      hold.calls.push(tokens);
      const given = whole && hold.affordable < tokens ? 0 : Math.min(tokens, hold.affordable);
      hold.affordable -= given;
      hold.granted += given;
      return given;
    },
  );
  return { gate, hold };
}

/** Passes events through the gate as the relay does; returns how many went out before one was refused. */
export async function relayThrough(gate: OutputGate, events: readonly CanonicalEvent[]): Promise<number> {
  let delivered = 0;
  for (const event of events) {
    const pass = gate.pass(event);
    if (pass !== true && !(await pass)) break;
    delivered += 1;
  }
  return delivered;
}

export const textDelta = (text: string): CanonicalEvent => ({ type: 'text-delta', blockId: 'b0', text });
