import { useEffect, useId, useRef, type ReactNode } from 'react';

interface DialogProps {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ReactNode;
  /** Buttons, right-aligned under the body. */
  actions?: ReactNode;
}

/** A modal on the native <dialog>: focus trapping, Escape and the dialog role come from the browser. */
export function Dialog({ title, open, onClose, children, actions }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (dialog === null) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={titleId} onClose={onClose} onCancel={onClose}>
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
