import { auth } from '../api/endpoints';
import type { Account } from '../api/types';
import { Link } from '../components/Link';
import { AuthForm } from './AuthForm';

export function LoginPage({ onSignedIn }: { onSignedIn: (account: Account) => void }) {
  return (
    <AuthForm
      title="Log in"
      submitLabel="Log in"
      passwordAutoComplete="current-password"
      submit={auth.login}
      onSignedIn={onSignedIn}
      footer={
        <>
          <Link href="/forgot-password">Forgot password?</Link> · No account yet?{' '}
          <Link href="/register">Create an account</Link>
        </>
      }
    />
  );
}
