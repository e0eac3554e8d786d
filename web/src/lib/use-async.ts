import { useCallback, useEffect, useRef, useState } from 'react';

export interface AsyncState<T> {
  data: T | undefined;
  error: Error | undefined;
  loading: boolean;
  reload: () => void;
  /** Shows `value` now, as the answer of an action that returns the fresh state; a load still in flight is dropped. */
  replace: (value: T) => void;
}

/** Runs `load` when `deps` change and on `reload()`; a late answer of an older run is dropped. */
export function useAsync<T>(load: () => Promise<T>, deps: readonly unknown[]): AsyncState<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<Error>();
  const [loading, setLoading] = useState(true);
  const [generation, setGeneration] = useState(0);
  const run = useRef(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: the caller's deps decide when to load again, not `load` (a new closure each render).
  useEffect(() => {
    const current = ++run.current;
    setLoading(true);
    load().then(
      (value) => {
        if (current !== run.current) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (reason: unknown) => {
        if (current !== run.current) return;
        setError(reason instanceof Error ? reason : new Error(String(reason)));
        setLoading(false);
      },
    );
  }, [...deps, generation]);
  const reload = useCallback(() => setGeneration((value) => value + 1), []);
  const replace = useCallback((value: T) => {
    run.current += 1;
    setData(value);
    setError(undefined);
    setLoading(false);
  }, []);
  return { data, error, loading, reload, replace };
}
