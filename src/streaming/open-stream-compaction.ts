/** Something an open stream keeps that grows with its reply and can be copied compact (see `flatCopy`). */
export interface Compactable {
  compact(): void;
}

/** How often the open streams' kept text is copied flat: what a slow stream keeps of its chunks meanwhile. */
export const COMPACTION_INTERVAL_MS = 3_000;

/**
 * Streams compacted in one event-loop turn: a pass over ten thousand streams with long replies copies megabytes,
 * and in one turn it would delay every other stream's chunks by that much (as the checkpoint batch's groups).
 */
export const COMPACTION_GROUP_SIZE = 128;

const open = new Set<Compactable>();
let timer: NodeJS.Timeout | undefined;
/** A pass is still going through its groups: the next tick skips rather than start a second one. */
let passRunning = false;

/**
 * Compacts `item` every COMPACTION_INTERVAL_MS until the returned function is called (when its stream is over).
 * One timer for every open stream, running only while there is one, rather than one per stream or work per chunk.
 */
export function compactWhileOpen(item: Compactable): () => void {
  open.add(item);
  if (timer === undefined) {
    timer = setInterval(compactAll, COMPACTION_INTERVAL_MS);
    timer.unref();
  }
  return () => {
    open.delete(item);
    if (open.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}

function compactAll(): void {
  if (passRunning) return;
  passRunning = true;
  compactGroup([...open], 0);
}

/** One group of the pass, then the next one on a later turn; a stream over meanwhile is left alone. */
function compactGroup(items: readonly Compactable[], start: number): void {
  const end = Math.min(start + COMPACTION_GROUP_SIZE, items.length);
  for (let index = start; index < end; index++) {
    const item = items[index]!;
    if (open.has(item)) item.compact();
  }
  if (end < items.length) setImmediate(compactGroup, items, end);
  else passRunning = false;
}
