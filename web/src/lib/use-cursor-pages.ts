import { useEffect, useState } from 'react';
import { useAsync, type AsyncState } from './use-async';

/** A cursor-paginated list: the current page, and moving between pages. */
export interface CursorPages<T> {
  page: AsyncState<T>;
  /** 0 for the first page. */
  index: number;
  hasNext: boolean;
  /** Still paging forward to the page a link asked for (`initialIndex`): the page shown is not the one asked for yet. */
  seeking: boolean;
  previous(): void;
  next(): void;
  /** Back to the first page (e.g. after the filter changed). */
  restart(): void;
}

/** The most pages a link may skip ahead: each is one request. */
const MAX_INITIAL_INDEX = 40;

/**
 * Pages of an API that only gives the next cursor: the cursors of the pages before are kept on a stack, so
 * "Previous" pops one. `load` runs again when the page or any of `deps` changes. `initialIndex` (a page number from
 * the URL) is reached by following the cursors from the first page; a list with fewer pages stops on its last.
 */
export function useCursorPages<T extends { nextCursor: string | null }>(
  load: (cursor: string | null) => Promise<T>,
  deps: readonly unknown[],
  initialIndex = 0,
): CursorPages<T> {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  const [target, setTarget] = useState(() => Math.min(Math.max(0, Math.floor(initialIndex)), MAX_INITIAL_INDEX));
  const cursor = cursors[cursors.length - 1] ?? null;
  // Each answer says which cursor it is for, so a stale page is never taken for the current one while seeking.
  const loaded = useAsync(async () => ({ cursor, value: await load(cursor) }), [cursor, ...deps]);
  const current = loaded.data?.cursor === cursor ? loaded.data.value : undefined;
  const nextCursor = current?.nextCursor ?? null;
  const index = cursors.length - 1;
  const seeking = index < target && loaded.error === undefined;
  useEffect(() => {
    if (!seeking || current === undefined) return;
    if (nextCursor === null) setTarget(index);
    else setCursors((stack) => (stack.length - 1 === index ? [...stack, nextCursor] : stack));
  }, [seeking, current, nextCursor, index]);
  const page: AsyncState<T> = {
    data: loaded.data?.value,
    error: loaded.error,
    loading: loaded.loading || seeking,
    reload: loaded.reload,
    replace: (value) => loaded.replace({ cursor, value }),
  };
  return {
    page,
    index,
    hasNext: nextCursor !== null,
    seeking,
    previous: () => {
      setTarget(Math.max(0, index - 1));
      setCursors((stack) => (stack.length > 1 ? stack.slice(0, -1) : stack));
    },
    next: () => {
      if (nextCursor === null) return;
      setTarget(index + 1);
      setCursors((stack) => [...stack, nextCursor]);
    },
    restart: () => {
      setTarget(0);
      setCursors([null]);
    },
  };
}
