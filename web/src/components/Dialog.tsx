import { useEffect, useId, useRef, type MouseEvent, type ReactNode, type SyntheticEvent } from 'react';

interface DialogProps {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ReactNode;
  /** Buttons, right-aligned under the body. */
  actions?: ReactNode;
  /**
   * Asked before Escape or a click outside closes the dialog; `false` keeps it open (the caller then asks the
   * user). Without it, Escape closes and an outside click does nothing.
   */
  onCloseRequest?: () => boolean;
}

/** A modal on the native <dialog>: focus trapping, Escape and the dialog role come from the browser. */
export function Dialog({ title, open, onClose, children, actions, onCloseRequest }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (dialog === null) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);

  function cancel(event: SyntheticEvent<HTMLDialogElement>) {
    if (onCloseRequest === undefined || onCloseRequest()) return;
    event.preventDefault();
  }

  // The browser may close on a repeated Escape even when `cancel` is prevented (no user activation in between):
  // a dialog its owner still holds open is opened again, so it only ever closes when `open` turns false.
  function closed() {
    const dialog = ref.current;
    if (open && onCloseRequest !== undefined && dialog !== null && !onCloseRequest()) {
      dialog.showModal();
      return;
    }
    onClose();
  }

  function backdropClick(event: MouseEvent<HTMLDialogElement>) {
    // A click on the <dialog> element itself, not its body, is a click on the backdrop.
    if (onCloseRequest === undefined || event.target !== event.currentTarget) return;
    if (onCloseRequest()) onClose();
  }

  return (
    // biome-ignore lint/a11y/useKeyWithClickEvents: the keyboard's way out is Escape (the dialog's cancel event).
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      onClose={closed}
      onCancel={cancel}
      onClick={backdropClick}
    >
      {open && (
        <div className="dialog-body">
          <h2 id={titleId} className="dialog-title">
            {title}
          </h2>
          {children}
          {actions !== undefined && <div className="dialog-actions">{actions}</div>}
        </div>
      )}
    </dialog>
  );
}
