import type { ReactNode } from 'react';

/** Server-written help text marks commands with `backticks`: render those as <code>, the rest as text. */
export function withInlineCode(text: string): ReactNode[] {
  return text.split(/`([^`]+)`/).map((part, index) => (index % 2 === 1 ? <code key={index}>{part}</code> : part));
}
