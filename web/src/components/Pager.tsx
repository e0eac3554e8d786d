import type { CursorPages } from '../lib/use-cursor-pages';

/** Previous / Next under a cursor-paginated list; nothing while the list fits one page. */
export function Pager<T extends { nextCursor: string | null }>({
  pages,
  label,
}: {
  pages: CursorPages<T>;
  label: string;
}) {
  if (pages.index === 0 && !pages.hasNext) return null;
  return (
    <nav className="pager" aria-label={`${label} pages`}>
      <button
        type="button"
        className="button button-secondary button-small"
        onClick={pages.previous}
        disabled={pages.index === 0}
      >
        Previous
      </button>
      <span className="muted">Page {pages.index + 1}</span>
      <button
        type="button"
        className="button button-secondary button-small"
        onClick={pages.next}
        disabled={!pages.hasNext}
      >
        Next
      </button>
    </nav>
  );
}
