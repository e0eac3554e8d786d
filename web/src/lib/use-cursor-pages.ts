import { useState } from 'react';
import { useAsync, type AsyncState } from './use-async';

/** A cursor-paginated list: the current page, and moving between pages. */
export interface CursorPages<T> {
  page: AsyncState<T>;
  /** 0 for the first page. */
  index: number;
  hasNext: boolean;
  previous(): void;
  next(): void;
  /** Back to the first page (e.g. after the filter changed). */
  restart(): void;
}

/**
 * Pages of an API that only gives the next cursor: the cursors of the pages before are kept on a stack, so
 * "Previous" pops one. `load` runs again when the page or any of `deps` changes.
 */
export function useCursorPages<T extends { nextCursor: string | null }>(
  load: (cursor: string | null) => Promise<T>,
  deps: readonly unknown[],
): CursorPages<T> {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const cursor = cursors[cursors.length - 1] ?? null;
  const page = useAsync(() => load(cursor), [cursor, ...deps]);
  const nextCursor = page.data?.nextCursor ?? null;
  return {
    page,
    index: cursors.length - 1,
    hasNext: nextCursor !== null,
    previous: () => setCursors((stack) => stack.slice(0, -1)),
    next: () => {
      if (nextCursor !== null) setCursors((stack) => [...stack, nextCursor]);
    },
    restart: () => setCursors([null]),
  };
}
