import { createContext, useContext } from 'react';
import type { Account } from '../api/types';

export interface SessionValue {
  account: Account;
  /** After logout or an expired session. */
  signOut: () => void;
  /** Reads the account again (its tier changed after an upgrade). */
  refresh: () => void;
}

export const SessionContext = createContext<SessionValue | null>(null);

export function useSession(): SessionValue {
  const value = useContext(SessionContext);
  if (value === null) throw new Error('useSession outside a logged-in page');
  return value;
}
