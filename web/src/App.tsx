import { lazy, Suspense, useCallback, useEffect, useState, type ReactElement } from 'react';
import { loadSession, setUnauthenticatedHandler } from './api/client';
import type { Account } from './api/types';
import { Layout } from './components/Layout';
import { Notice } from './components/Notice';
import { navigate, usePath } from './lib/router';
import { SessionContext } from './lib/session';
import { LoginPage } from './pages/LoginPage';
import { NotFoundPage } from './pages/NotFoundPage';
import { RegisterPage } from './pages/RegisterPage';
import { VerifyEmailBanner } from './components/account/VerifyEmailBanner';
import { ForgotPasswordPage } from './pages/ForgotPasswordPage';
import { ResetPasswordPage } from './pages/ResetPasswordPage';
import { VerifyEmailPage } from './pages/VerifyEmailPage';
import { AcceptInvitationPage } from './pages/AcceptInvitationPage';
import { OrganisationProvider } from './lib/organisation-provider';

// Every signed-in page is its own chunk, loaded when first opened: the log-in page downloads only React and the
// form. The usage page also pulls in the chart library.
const OverviewPage = lazy(() => import('./pages/OverviewPage').then((module) => ({ default: module.OverviewPage })));
const KeysPage = lazy(() => import('./pages/KeysPage').then((module) => ({ default: module.KeysPage })));
const ProjectsPage = lazy(() => import('./pages/ProjectsPage').then((module) => ({ default: module.ProjectsPage })));
const ModelsPage = lazy(() => import('./pages/ModelsPage').then((module) => ({ default: module.ModelsPage })));
const PlaygroundPage = lazy(() =>
  import('./pages/PlaygroundPage').then((module) => ({ default: module.PlaygroundPage })),
);
const UsagePage = lazy(() => import('./pages/UsagePage').then((module) => ({ default: module.UsagePage })));
const BillingPage = lazy(() => import('./pages/BillingPage').then((module) => ({ default: module.BillingPage })));
const SettingsPage = lazy(() => import('./pages/SettingsPage').then((module) => ({ default: module.SettingsPage })));
const AuditPage = lazy(() => import('./pages/AuditPage').then((module) => ({ default: module.AuditPage })));
const LimitsAlertsPage = lazy(() =>
  import('./pages/LimitsAlertsPage').then((module) => ({ default: module.LimitsAlertsPage })),
);
const MembersPage = lazy(() => import('./pages/MembersPage').then((module) => ({ default: module.MembersPage })));
const AdminPage = lazy(() => import('./pages/AdminPage').then((module) => ({ default: module.AdminPage })));

const PAGES: Record<string, { title: string; render: () => ReactElement }> = {
  '/': { title: 'Overview', render: () => <OverviewPage /> },
  '/keys': { title: 'API keys', render: () => <KeysPage /> },
  '/projects': { title: 'Projects', render: () => <ProjectsPage /> },
  '/models': { title: 'Models', render: () => <ModelsPage /> },
  '/playground': { title: 'Playground', render: () => <PlaygroundPage /> },
  '/usage': { title: 'Usage', render: () => <UsagePage /> },
  '/billing': { title: 'Billing', render: () => <BillingPage /> },
  '/limits': { title: 'Limits & alerts', render: () => <LimitsAlertsPage /> },
  '/members': { title: 'Members', render: () => <MembersPage /> },
  '/settings': { title: 'Settings', render: () => <SettingsPage /> },
  '/audit': { title: 'Audit log', render: () => <AuditPage /> },
  '/admin': { title: 'Operator', render: () => <AdminPage /> },
};

const PUBLIC_PATHS = new Set(['/login', '/register']);
/** Pages opened from a mailed link (or the way to ask for one): shown signed in or not, never redirected. */
const LINK_PATHS = new Set(['/forgot-password', '/reset-password', '/verify-email', '/accept-invitation']);
const LINK_TITLES: Record<string, string> = {
  '/forgot-password': 'Reset password',
  '/reset-password': 'Reset password',
  '/verify-email': 'Verify email',
  '/accept-invitation': 'Join an organisation',
};

/** Where to go after logging in: the page asked for (`?next=/usage`), only ever a path of this app. */
function nextPath(): string {
  const next = new URLSearchParams(window.location.search).get('next');
  if (next === null || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/\\')) return '/';
  return PUBLIC_PATHS.has(next.split('?')[0]!) ? '/' : next;
}

export function App() {
  const path = usePath();
  const [account, setAccount] = useState<Account | null | undefined>(undefined);
  const [loadError, setLoadError] = useState<Error>();

  // Stable: the verify page calls it once, on arrival.
  const refresh = useCallback(() => void loadSession().then(setAccount, () => undefined), []);

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
    document.title = LINK_PATHS.has(path)
      ? `${LINK_TITLES[path]} · Tollgate`
      : account
        ? `${page?.title ?? 'Not found'} · Tollgate`
        : path === '/register'
          ? 'Create account · Tollgate'
          : 'Log in · Tollgate';
  }, [account, page, path]);

  useEffect(() => {
    // A deep link while logged out: log in first, then land on the page asked for.
    if (account === null && !PUBLIC_PATHS.has(path) && !LINK_PATHS.has(path)) {
      const asked = path + window.location.search;
      navigate(asked === '/' ? '/login' : `/login?next=${encodeURIComponent(asked)}`, { replace: true });
    }
    if (account && PUBLIC_PATHS.has(path)) navigate(nextPath(), { replace: true });
  }, [account, path]);

  if (loadError !== undefined && account === undefined) {
    return (
      <main className="auth-page">
        <Notice kind="error">The dashboard could not reach the server: {loadError.message}</Notice>
      </main>
    );
  }
  if (account === undefined) return <p className="muted loading">Loading…</p>;
  const signedIn = (next: Account) => {
    const target = nextPath();
    setAccount(next);
    navigate(target, { replace: true });
  };
  if (path === '/forgot-password') return <ForgotPasswordPage />;
  if (path === '/reset-password')
    return (
      <ResetPasswordPage
        onSignedIn={(next, target) => {
          setAccount(next);
          navigate(target, { replace: true });
        }}
      />
    );
  if (path === '/verify-email') return <VerifyEmailPage onVerified={refresh} />;
  if (path === '/accept-invitation')
    return <AcceptInvitationPage account={account} onAccepted={() => navigate('/members', { replace: true })} />;
  if (account === null)
    return path === '/register' ? <RegisterPage onSignedIn={signedIn} /> : <LoginPage onSignedIn={signedIn} />;
  return (
    <SessionContext.Provider
      value={{ account, signOut, refresh: () => void loadSession().then((next) => next !== null && setAccount(next)) }}
    >
      <OrganisationProvider>
        <Layout path={path}>
          <VerifyEmailBanner path={path} />
          <Suspense fallback={<p className="muted loading">Loading…</p>}>
            {page === undefined ? <NotFoundPage /> : page.render()}
          </Suspense>
        </Layout>
      </OrganisationProvider>
    </SessionContext.Provider>
  );
}
