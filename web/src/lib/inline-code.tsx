import type { ReactNode } from 'react';

/** Server-written help text marks commands with `backticks`: render those as <code>, the rest as text. */
export function withInlineCode(text: string): ReactNode[] {
  // biome-ignore lint/suspicious/noArrayIndexKey: the parts of one text never move, so their place is their identity.
  return text.split(/`([^`]+)`/).map((part, index) => (index % 2 === 1 ? <code key={index}>{part}</code> : part));
}
