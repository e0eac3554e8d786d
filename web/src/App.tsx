import { lazy, Suspense, useCallback, useEffect, useState, type ReactElement } from 'react';
import { loadSession, setUnauthenticatedHandler } from './api/client';
import type { Account } from './api/types';
import { Layout } from './components/Layout';
import { Notice } from './components/Notice';
import { navigate, usePath } from './lib/router';
import { SessionContext } from './lib/session';
import { AdminPage } from './pages/AdminPage';
import { BillingPage } from './pages/BillingPage';
import { KeysPage } from './pages/KeysPage';
import { LoginPage } from './pages/LoginPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { OverviewPage } from './pages/OverviewPage';
import { RegisterPage } from './pages/RegisterPage';
import { SettingsPage } from './pages/SettingsPage';

// The usage page pulls in the chart library: loaded when first opened.
const UsagePage = lazy(() => import('./pages/UsagePage').then((module) => ({ default: module.UsagePage })));

const PAGES: Record<string, { title: string; render: () => ReactElement }> = {
  '/': { title: 'Overview', render: () => <OverviewPage /> },
  '/keys': { title: 'API keys', render: () => <KeysPage /> },
  '/usage': { title: 'Usage', render: () => <UsagePage /> },
  '/billing': { title: 'Billing', render: () => <BillingPage /> },
  '/settings': { title: 'Settings', render: () => <SettingsPage /> },
  '/admin': { title: 'Operator', render: () => <AdminPage /> },
};

const PUBLIC_PATHS = new Set(['/login', '/register']);

export function App() {
  const path = usePath();
  const [account, setAccount] = useState<Account | null | undefined>(undefined);
  const [loadError, setLoadError] = useState<Error>();

  const signOut = useCallback(() => {
    setAccount(null);
    // Fetch a fresh CSRF token bound to the (now anonymous) session for the next log-in.
    void loadSession().catch(() => undefined);
    navigate('/login', { replace: true });
  }, []);

  useEffect(() => {
    setUnauthenticatedHandler(() => setAccount(null));
    loadSession().then(setAccount, (error: Error) => setLoadError(error));
  }, []);

  const page = PAGES[path];
  useEffect(() => {
    document.title = account ? `${page?.title ?? 'Not found'} · Tollgate` : path === '/register' ? 'Create account · Tollgate' : 'Log in · Tollgate';
  }, [account, page, path]);

  useEffect(() => {
    if (account === null && !PUBLIC_PATHS.has(path)) navigate('/login', { replace: true });
    if (account && PUBLIC_PATHS.has(path)) navigate('/', { replace: true });
  }, [account, path]);

  if (loadError !== undefined && account === undefined) {
    return (
      <div className="auth-page">
        <Notice kind="error">The dashboard could not reach the server: {loadError.message}</Notice>
      </div>
    );
  }
  if (account === undefined) return <p className="muted loading">Loading…</p>;
  const signedIn = (next: Account) => {
    setAccount(next);
    navigate('/', { replace: true });
  };
  if (account === null) return path === '/register' ? <RegisterPage onSignedIn={signedIn} /> : <LoginPage onSignedIn={signedIn} />;
  return (
    <SessionContext.Provider value={{ account, signOut }}>
      <Layout path={path}>
        <Suspense fallback={<p className="muted loading">Loading…</p>}>{page === undefined ? <NotFoundPage /> : page.render()}</Suspense>
      </Layout>
    </SessionContext.Provider>
  );
}
