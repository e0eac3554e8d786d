import { useState, type FormEvent } from 'react';
import { admin } from '../../api/endpoints';
import type { AdminAccount, TierInfo } from '../../api/types';
import { formatCount, formatDate } from '../../lib/format';
import { formatCost, formatUsd } from '../../lib/money';
import { useCursorPages } from '../../lib/use-cursor-pages';
import { useSession } from '../../lib/session';
import { ConfirmDialog } from '../ConfirmDialog';
import { ErrorNotice, Loading, Notice } from '../Notice';
import { Pager } from '../Pager';
import { StatusBadge } from '../StatusBadge';
import { CreditDialog } from './CreditDialog';
import { IdentityActions } from './IdentityActions';

const PAGE_SIZE = 50;

/** Accounts with balance and 30-day usage; credit, change tier, disable / enable. */
export function AccountsTable({ tiers }: { tiers: TierInfo[] }) {
  const { account: self } = useSession();
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState('');
  const [refreshKey, setRefreshKey] = useState(0);
  const pages = useCursorPages((cursor) => admin.accounts(applied, PAGE_SIZE, cursor), [applied, refreshKey]);
  const list = pages.page;
  const [crediting, setCrediting] = useState<AdminAccount | null>(null);
  const [toggling, setToggling] = useState<AdminAccount | null>(null);
  const [message, setMessage] = useState<{ kind: 'success' | 'error'; text: string }>();
  const [busy, setBusy] = useState(false);
  const refresh = () => setRefreshKey((value) => value + 1);

  function submitSearch(event: FormEvent) {
    event.preventDefault();
    pages.restart();
    setApplied(search.trim());
  }
  async function changeTier(account: AdminAccount, tier: string) {
    try {
      await admin.setTier(account.id, tier);
      setMessage({ kind: 'success', text: `${account.email} is now on the ${tier} tier.` });
      refresh();
    } catch (reason) {
      setMessage({ kind: 'error', text: (reason as Error).message });
    }
  }
  async function toggleDisabled() {
    if (toggling === null) return;
    setBusy(true);
    try {
      await admin.setDisabled(toggling.id, !toggling.disabled);
      setMessage({
        kind: 'success',
        text: `${toggling.email} is ${toggling.disabled ? 'enabled again' : 'disabled; its keys and sessions stopped working'}.`,
      });
      setToggling(null);
      refresh();
    } catch (reason) {
      setMessage({ kind: 'error', text: (reason as Error).message });
      setToggling(null);
    } finally {
      setBusy(false);
    }
  }

  const accounts = list.data?.accounts ?? [];
  return (
    <>
      <form className="form-row" onSubmit={submitSearch} role="search">
        <div className="field grow">
          <label htmlFor="account-search">Search accounts</label>
          <input
            id="account-search"
            className="input"
            type="search"
            placeholder="email or account id"
            value={search}
            onChange={(event) => setSearch(event.target.value)}
          />
        </div>
        <button type="submit" className="button button-secondary">
          Search
        </button>
      </form>
      {message !== undefined && <Notice kind={message.kind}>{message.text}</Notice>}
      <ErrorNotice error={list.error} />
      {list.loading && list.data === undefined && <Loading />}
      {list.data !== undefined && accounts.length === 0 && <p className="muted">No accounts match.</p>}
      {accounts.length > 0 && (
        <div className="table-wrap" tabIndex={0} role="region" aria-label="Accounts, scrollable">
          <table className="table table-dense table-stack">
            <caption className="visually-hidden">Accounts</caption>
            <thead>
              <tr>
                <th scope="col">Account</th>
                <th scope="col">Tier</th>
                <th scope="col" className="num">
                  Balance
                </th>
                <th scope="col" className="num">
                  Requests (30 d)
                </th>
                <th scope="col" className="num">
                  Spend (30 d)
                </th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {accounts.map((account) => (
                <tr key={account.id}>
                  <th scope="row">
                    <div>{account.email}</div>
                    <div className="muted small">
                      {account.role === 'admin' ? 'operator · ' : ''}since {formatDate(account.createdAt)}
                    </div>
                  </th>
                  <td data-label="Tier">
                    <select
                      className="input input-small"
                      aria-label={`Tier of ${account.email}`}
                      value={account.tier}
                      onChange={(event) => void changeTier(account, event.target.value)}
                    >
                      {tiers.map((tier) => (
                        <option key={tier.name} value={tier.name}>
                          {tier.name}
                        </option>
                      ))}
                      {!tiers.some((tier) => tier.name === account.tier) && (
                        <option value={account.tier}>{account.tier}</option>
                      )}
                    </select>
                  </td>
                  <td data-label="Balance" className="num">
                    {formatUsd(account.balanceUsd)}
                  </td>
                  <td data-label="Requests (30 d)" className="num">
                    {formatCount(account.requests30d)}
                  </td>
                  <td data-label="Spend (30 d)" className="num">
                    {formatCost(account.costUsd30d)}
                  </td>
                  <td data-label="Status">
                    <StatusBadge status={account.disabled ? 'disabled' : 'active'} />
                  </td>
                  <td className="actions">
                    <button
                      type="button"
                      className="button button-secondary button-small"
                      aria-label={`Credit ${account.email}`}
                      onClick={() => setCrediting(account)}
                    >
                      Credit
                    </button>
                    <IdentityActions account={account} onMessage={setMessage} />
                    {account.id !== self.id && (
                      <button
                        type="button"
                        className={`button button-small ${account.disabled ? 'button-secondary' : 'button-danger-outline'}`}
                        aria-label={`${account.disabled ? 'Enable' : 'Disable'} ${account.email}`}
                        onClick={() => setToggling(account)}
                      >
                        {account.disabled ? 'Enable' : 'Disable'}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager label="Accounts" pages={pages} />
      <CreditDialog
        account={crediting}
        onClose={() => setCrediting(null)}
        onDone={(text) => {
          setMessage({ kind: 'success', text });
          refresh();
        }}
      />
      <ConfirmDialog
        title={toggling?.disabled ? 'Enable this account?' : 'Disable this account?'}
        open={toggling !== null}
        confirmLabel={toggling?.disabled ? 'Enable account' : 'Disable account'}
        danger={!toggling?.disabled}
        busy={busy}
        onConfirm={toggleDisabled}
        onCancel={() => setToggling(null)}
      >
        <p>
          {toggling?.disabled
            ? `${toggling.email} can log in and use its keys again.`
            : `${toggling?.email ?? ''} is logged out and every key of the account gets 401 at once. Its balance is kept.`}
        </p>
      </ConfirmDialog>
    </>
  );
}
