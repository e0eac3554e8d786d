import { auth } from '../api/endpoints';
import type { Account } from '../api/types';
import { Link } from '../components/Link';
import { AuthForm, PASSWORD_RULES } from './AuthForm';

export function RegisterPage({ onSignedIn }: { onSignedIn: (account: Account) => void }) {
  return (
    <AuthForm
      title="Create your account"
      submitLabel="Create account"
      passwordAutoComplete="new-password"
      passwordHint={`Password: ${PASSWORD_RULES}`}
      submit={auth.register}
      onSignedIn={onSignedIn}
      footer={
        <>
          Already have an account? <Link href="/login">Log in</Link>
        </>
      }
    />
  );
}
