/** Cursor pagination: a stack of the cursors of the pages before, since the API only gives the next one. */
export function Pager({ page, hasNext, onPrevious, onNext, label }: { page: number; hasNext: boolean; onPrevious: () => void; onNext: () => void; label: string }) {
  return (
    <nav className="pager" aria-label={`${label} pages`}>
      <button type="button" className="button button-secondary button-small" onClick={onPrevious} disabled={page === 0}>
        Previous
      </button>
      <span className="muted">Page {page + 1}</span>
      <button type="button" className="button button-secondary button-small" onClick={onNext} disabled={!hasNext}>
        Next
      </button>
    </nav>
  );
}
