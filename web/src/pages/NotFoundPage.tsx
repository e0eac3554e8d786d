import { Link } from '../components/Link';
import { PageHeader } from '../components/PageHeader';

export function NotFoundPage() {
  return (
    <>
      <PageHeader title="Page not found" />
      <p>
        There is no page at this address. Go to the <Link href="/">overview</Link>.
      </p>
    </>
  );
}
