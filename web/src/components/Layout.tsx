import { Fragment, useEffect, useState, type ReactNode } from 'react';
import { auth } from '../api/endpoints';
import { useOrganisation } from '../lib/organisation';
import { useSession } from '../lib/session';
import { Notice } from './Notice';
import { OrganisationSwitcher } from './OrganisationSwitcher';
import { Link } from './Link';
import { RefusalBanner } from './RefusalBanner';
import { SignInPolicyPrompt } from './SignInPolicyPrompt';

interface NavItem {
  href: string;
  label: string;
  adminOnly?: boolean;
}

export const NAV_ITEMS: NavItem[] = [
  { href: '/', label: 'Overview' },
  { href: '/keys', label: 'API keys' },
  { href: '/projects', label: 'Projects' },
  { href: '/models', label: 'Models' },
  { href: '/playground', label: 'Playground' },
  { href: '/usage', label: 'Usage' },
  { href: '/billing', label: 'Billing' },
  { href: '/limits', label: 'Limits & alerts' },
  { href: '/members', label: 'Members' },
  { href: '/settings', label: 'Settings' },
  { href: '/audit', label: 'Audit log' },
  { href: '/admin', label: 'Operator', adminOnly: true },
];

function Brand() {
  return (
    <Link href="/" className="brand">
      <span className="brand-mark" aria-hidden="true">
        T
      </span>
      <span>Tollgate</span>
    </Link>
  );
}

/** Sidebar navigation on wide screens; a top bar with a menu button on phones (the same nav, toggled). */
export function Layout({ path, children }: { path: string; children: ReactNode }) {
  const { account, signOut } = useSession();
  const organisation = useOrganisation();
  const [menuOpen, setMenuOpen] = useState(false);
  // biome-ignore lint/correctness/useExhaustiveDependencies: path is the trigger: the menu closes on each navigation.
  useEffect(() => setMenuOpen(false), [path]);
  // A page that is still refused says so again when it loads; one that is not must not show an old refusal.
  const { clearSignInRefusal } = organisation;
  // biome-ignore lint/correctness/useExhaustiveDependencies: path is the trigger: the refusal is asked again on each navigation.
  useEffect(() => clearSignInRefusal(), [path, clearSignInRefusal]);
  const items = NAV_ITEMS.filter((item) => !item.adminOnly || account.role === 'admin');

  async function logOut() {
    try {
      await auth.logout();
    } finally {
      signOut();
    }
  }

  return (
    <div className="shell">
      <header className="topbar">
        <Brand />
        <button
          type="button"
          className="button button-secondary button-small"
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpen((open) => !open)}
        >
          {menuOpen ? 'Close' : 'Menu'}
        </button>
      </header>
      <aside className={`sidebar${menuOpen ? ' sidebar-open' : ''}`}>
        <div className="sidebar-brand">
          <Brand />
        </div>
        <OrganisationSwitcher />
        <nav id="main-nav" aria-label="Main">
          <ul className="nav-list">
            {items.map((item) => (
              <li key={item.href}>
                <Link href={item.href} className="nav-link" aria-current={item.href === path ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="sidebar-footer">
          <p className="sidebar-email" title={account.email}>
            {/* A long address breaks before its "@" rather than at a hyphen or mid-word. */}
            <span className="unbroken">{account.email.split('@')[0]}</span>
            <wbr />
            <span className="unbroken">@{account.email.split('@').slice(1).join('@')}</span>
          </p>
          <p className="muted small">
            {account.role === 'admin' ? 'Operator · ' : ''}
            {account.tier} tier
          </p>
          <button type="button" className="button button-secondary button-small" onClick={logOut}>
            Log out
          </button>
        </div>
      </aside>
      <main className="content" id="content">
        {organisation.notice !== undefined && <Notice kind="warning">{organisation.notice}</Notice>}
        {/* Keyed by the organisation: a switch loads every page's data again. */}
        <Fragment key={organisation.current?.id ?? 'none'}>
          {organisation.signInRefusal !== undefined && (
            <SignInPolicyPrompt refusal={organisation.signInRefusal} path={path} onSignOut={() => void logOut()} />
          )}
          <RefusalBanner path={path} />
          {children}
        </Fragment>
      </main>
    </div>
  );
}
