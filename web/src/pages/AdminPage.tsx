import { overview } from '../api/endpoints';
import { AccountsTable } from '../components/admin/AccountsTable';
import { CatalogPanel } from '../components/admin/CatalogPanel';
import { CodesForm } from '../components/admin/CodesForm';
import { UpstreamStatus } from '../components/admin/UpstreamStatus';
import { Notice } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { useAsync } from '../lib/use-async';
import { useSession } from '../lib/session';

export function AdminPage() {
  const { account } = useSession();
  // The tier names come from the overview, which lists every configured tier.
  const tiers = useAsync(overview, []);
  if (account.role !== 'admin') return <Notice kind="error">This page is for operators.</Notice>;
  return (
    <>
      <PageHeader
        title="Operator"
        description="Accounts, credit, redemption codes, the model catalog and upstream health."
      />
      <section className="card section" aria-labelledby="accounts-heading">
        <h2 id="accounts-heading">Accounts</h2>
        <AccountsTable tiers={tiers.data?.tiers ?? []} />
      </section>
      <section className="card section" aria-labelledby="codes-heading">
        <h2 id="codes-heading">Redemption codes</h2>
        <p className="muted">
          Prepaid codes a person redeems on their Billing page. Only a hash of each code is stored.
        </p>
        <CodesForm />
      </section>
      <section className="card section" aria-labelledby="catalog-heading">
        <h2 id="catalog-heading">Model catalog</h2>
        <CatalogPanel />
      </section>
      <section className="card section" aria-labelledby="upstreams-heading">
        <h2 id="upstreams-heading">Upstream credentials</h2>
        <UpstreamStatus />
      </section>
    </>
  );
}
