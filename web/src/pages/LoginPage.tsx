import { useState } from 'react';
import { identity, type PendingSecondFactor } from '../api/identity';
import type { Account } from '../api/types';
import { Link } from '../components/Link';
import { SignInAlternatives } from '../components/SignInAlternatives';
import { AuthForm } from './AuthForm';
import { SecondFactorStep } from './SecondFactorStep';

export function LoginPage({ onSignedIn }: { onSignedIn: (account: Account) => void }) {
  const [pending, setPending] = useState<PendingSecondFactor>();
  if (pending !== undefined) {
    return <SecondFactorStep pending={pending} onSignedIn={onSignedIn} onRestart={() => setPending(undefined)} />;
  }
  return (
    <AuthForm
      title="Log in"
      submitLabel="Log in"
      passwordAutoComplete="current-password"
      submit={async (email, password) => {
        const reply = await identity.login(email, password);
        if (reply.account !== null) return { account: reply.account };
        // The password was right and a second factor is set up: this page swaps the form for the second step,
        // so the form's promise never needs to settle.
        setPending(reply.secondFactor);
        return new Promise<never>(() => undefined);
      }}
      onSignedIn={onSignedIn}
      alternatives={<SignInAlternatives onSignedIn={onSignedIn} />}
      footer={
        <>
          <Link href="/forgot-password">Forgot password?</Link> · No account yet?{' '}
          <Link href="/register">Create an account</Link>
        </>
      }
    />
  );
}
