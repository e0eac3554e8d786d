import { Link } from './Link';

/**
 * Shown on every page while the organisation's sign-in policy refuses this session: what it asks for, and the one
 * action that meets it (set up a second factor, or sign in again the way the organisation requires).
 */
export function SignInPolicyPrompt({
  refusal,
  path,
  onSignOut,
}: {
  refusal: { code: string; message: string };
  path: string;
  onSignOut: () => void;
}) {
  const enrol = refusal.code === 'second_factor_enrolment_required';
  return (
    <div className="refusal-banner" role="alert">
      <p>
        <strong>
          {refusal.code === 'sso_required_by_organisation' ? 'Single sign-on needed.' : 'Two-step sign-in needed.'}
        </strong>{' '}
        {refusal.message}
      </p>
      {enrol ? (
        path !== '/settings' && (
          <Link href="/settings#security" className="button button-primary button-small">
            Set up two-step sign-in
          </Link>
        )
      ) : (
        <button type="button" className="button button-primary button-small" onClick={onSignOut}>
          Sign out to sign in again
        </button>
      )}
    </div>
  );
}
