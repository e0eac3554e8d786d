/** Something an open stream keeps that grows with its reply and can be copied compact (see `flatCopy`). */
export interface Compactable {
  compact(): void;
}

/** How often the open streams' kept text is copied flat: what a slow stream keeps of its chunks meanwhile. */
export const COMPACTION_INTERVAL_MS = 3_000;

const open = new Set<Compactable>();
let timer: NodeJS.Timeout | undefined;

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
  for (const item of open) item.compact();
}
