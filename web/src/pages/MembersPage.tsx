import { useState, type FormEvent } from 'react';
import {
  invitations as invitationsApi,
  members as membersApi,
  ORGANISATION_ROLES,
  organisations as organisationsApi,
  type Member,
  type OrganisationRole,
} from '../api/organisations';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { ErrorNotice, Loading, Notice } from '../components/Notice';
import { PageHeader } from '../components/PageHeader';
import { SignInPolicySettings } from '../components/SignInPolicySettings';
import { formatDate } from '../lib/format';
import { roleReason, useCan, useOrganisation } from '../lib/organisation';
import { useAsync } from '../lib/use-async';

type Message = { kind: 'success' | 'error'; text: string };

/** The members of the session's organisation, their roles, invitations, and leaving. */
export function MembersPage() {
  const { current, reload: reloadOrganisations } = useOrganisation();
  const canManage = useCan('members:manage');
  const isOwner = current?.role === 'owner';
  const list = useAsync(() => membersApi.list(), [current?.id]);
  const pending = useAsync(
    () => (canManage ? invitationsApi.list() : Promise.resolve({ invitations: [] })),
    [current?.id, canManage],
  );
  const [message, setMessage] = useState<Message>();
  const [removing, setRemoving] = useState<Member>();
  const [leaving, setLeaving] = useState(false);
  const [busy, setBusy] = useState(false);

  async function act(work: () => Promise<string>) {
    setBusy(true);
    setMessage(undefined);
    try {
      setMessage({ kind: 'success', text: await work() });
    } catch (reason) {
      setMessage({ kind: 'error', text: (reason as Error).message });
    } finally {
      setBusy(false);
      list.reload();
      pending.reload();
    }
  }

  /** Roles this person may give: only an owner makes owners. */
  const assignable = ORGANISATION_ROLES.filter((role) => isOwner || role !== 'owner');
  const mayChange = (member: Member) => canManage && (isOwner || member.role !== 'owner');

  return (
    <>
      <PageHeader
        title="Members"
        description={`People in ${current?.name ?? 'this organisation'} and what each may do.`}
        actions={
          <button type="button" className="button button-secondary" onClick={() => setLeaving(true)}>
            Leave organisation
          </button>
        }
      />
      {message !== undefined && <Notice kind={message.kind}>{message.text}</Notice>}
      <ErrorNotice error={list.error} />
      {list.loading && list.data === undefined && <Loading />}
      {list.data !== undefined && (
        <section className="card section" aria-labelledby="members-heading">
          <h2 id="members-heading">Members</h2>
          {!canManage && <p className="muted small">{roleReason(current?.role, 'changing members')}</p>}
          <div className="table-wrap" tabIndex={0} role="region" aria-label="Members, scrollable">
            <table className="table table-stack">
              <caption className="visually-hidden">Members and their roles</caption>
              <thead>
                <tr>
                  <th scope="col">Member</th>
                  <th scope="col">Role</th>
                  <th scope="col">Sign-in</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {list.data.members.map((member) => (
                  <tr key={member.accountId}>
                    <th scope="row">
                      <div className="unbroken-email">
                        {member.email}
                        {member.you ? ' (you)' : ''}
                      </div>
                      <div className="muted small">joined {formatDate(member.joinedAt)}</div>
                    </th>
                    <td data-label="Role">
                      {mayChange(member) ? (
                        <select
                          className="input input-small"
                          aria-label={`Role of ${member.email}`}
                          value={member.role}
                          disabled={busy}
                          onChange={(event) => {
                            const role = event.target.value as OrganisationRole;
                            void act(async () => {
                              await membersApi.changeRole(member.accountId, role);
                              return `${member.email} is now ${role}.`;
                            });
                          }}
                        >
                          {(member.role === 'owner' ? ORGANISATION_ROLES : assignable).map((role) => (
                            <option key={role} value={role}>
                              {role}
                            </option>
                          ))}
                        </select>
                      ) : (
                        member.role
                      )}
                    </td>
                    <td data-label="Sign-in">
                      <SignInState member={member} />
                    </td>
                    <td className="actions">
                      {mayChange(member) && !member.you && (
                        <button
                          type="button"
                          className="button button-secondary button-small"
                          aria-label={`Remove ${member.email}`}
                          onClick={() => setRemoving(member)}
                        >
                          Remove
                        </button>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </section>
      )}
      <SignInPolicySettings isOwner={isOwner} onChanged={() => list.reload()} />
      {canManage && (
        <InviteSection
          roles={assignable}
          pending={pending.data?.invitations ?? []}
          onChanged={() => pending.reload()}
          onRevoke={(id, email) =>
            void act(async () => {
              await invitationsApi.revoke(id);
              return `The invitation to ${email} was withdrawn.`;
            })
          }
        />
      )}
      <ConfirmDialog
        title="Remove member"
        open={removing !== undefined}
        confirmLabel="Remove"
        danger
        busy={busy}
        onCancel={() => setRemoving(undefined)}
        onConfirm={() => {
          const member = removing!;
          setRemoving(undefined);
          void act(async () => {
            await membersApi.remove(member.accountId);
            return `${member.email} was removed; the keys they made here are revoked.`;
          });
        }}
      >
        <p>{removing?.email} loses access at once, and the API keys they created in this organisation stop working.</p>
      </ConfirmDialog>
      <ConfirmDialog
        title="Leave organisation"
        open={leaving}
        confirmLabel="Leave"
        danger
        busy={busy}
        onCancel={() => setLeaving(false)}
        onConfirm={() => {
          setLeaving(false);
          setBusy(true);
          organisationsApi
            .leave()
            .then(
              () => reloadOrganisations(),
              (reason: Error) => setMessage({ kind: 'error', text: reason.message }),
            )
            .finally(() => setBusy(false));
        }}
      >
        <p>
          You lose access to {current?.name} and the API keys you created there stop working. An organisation keeps at
          least one owner: make someone else an owner first if you are the only one.
        </p>
      </ConfirmDialog>
    </>
  );
}

/** How a member can sign in: whether they have a second factor, and the SSO providers linked to them. */
function SignInState({ member }: { member: Member }) {
  const factors = [
    ...(member.signIn.totp ? ['authenticator app'] : []),
    ...(member.signIn.passkeys > 0
      ? [member.signIn.passkeys === 1 ? '1 passkey' : `${member.signIn.passkeys} passkeys`]
      : []),
  ];
  return (
    <ul className="plain-list sign-in-badges" aria-label={`How ${member.email} signs in`}>
      <li className={member.signIn.secondFactor ? 'badge badge-green' : 'badge badge-amber'}>
        {member.signIn.secondFactor ? `Two-step: ${factors.join(', ')}` : 'No second factor'}
      </li>
      {member.signIn.ssoProviders.map((provider) => (
        <li key={provider} className="badge badge-blue">
          SSO: {provider}
          {member.provisionedBy === provider ? ' (role from provider)' : ''}
        </li>
      ))}
    </ul>
  );
}

function InviteSection({
  roles,
  pending,
  onChanged,
  onRevoke,
}: {
  roles: OrganisationRole[];
  pending: { id: string; email: string; role: OrganisationRole; expiresAt: number }[];
  onChanged: () => void;
  onRevoke: (id: string, email: string) => void;
}) {
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<OrganisationRole>('developer');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ kind: 'success' | 'error'; text: string; link?: string }>();

  async function invite(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setResult(undefined);
    try {
      const sent = await invitationsApi.create(email, role);
      const link = sent.link === null ? undefined : (sent.link.url ?? `${window.location.origin}${sent.link.path}`);
      setResult(
        sent.mailed
          ? { kind: 'success', text: `An invitation went to ${email}.` }
          : {
              kind: 'success',
              text: `This gateway sends no mail: pass this link to ${email} yourself. It works once, for 7 days.`,
              ...(link === undefined ? {} : { link }),
            },
      );
      setEmail('');
      onChanged();
    } catch (reason) {
      setResult({ kind: 'error', text: (reason as Error).message });
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="card section" aria-labelledby="invite-heading">
      <h2 id="invite-heading">Invite someone</h2>
      <form onSubmit={invite} className="stack">
        <div className="form-row">
          <div className="field grow">
            <label htmlFor="invite-email">Email address</label>
            <input
              id="invite-email"
              className="input"
              type="email"
              autoComplete="off"
              required
              value={email}
              onChange={(event) => setEmail(event.target.value)}
            />
          </div>
          <div className="field">
            <label htmlFor="invite-role">Role</label>
            <select
              id="invite-role"
              className="input"
              value={role}
              onChange={(event) => setRole(event.target.value as OrganisationRole)}
            >
              {roles.map((option) => (
                <option key={option} value={option}>
                  {option}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" className="button button-primary" disabled={busy || email.trim() === ''}>
            {busy ? 'Inviting…' : 'Invite'}
          </button>
        </div>
        {result !== undefined && (
          <Notice kind={result.kind}>
            {result.text}
            {result.link !== undefined && (
              <span className="invite-link">
                <code className="mono">{result.link}</code> <CopyButton text={result.link} label="Copy link" />
              </span>
            )}
          </Notice>
        )}
      </form>
      <h3 className="pending-heading">Pending invitations</h3>
      {pending.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <ul className="plain-list">
          {pending.map((invitation) => (
            <li key={invitation.id} className="pending-invitation">
              <span>
                {invitation.email} · {invitation.role} · until {formatDate(invitation.expiresAt)}
              </span>
              <button
                type="button"
                className="button button-secondary button-small"
                aria-label={`Withdraw the invitation to ${invitation.email}`}
                onClick={() => onRevoke(invitation.id, invitation.email)}
              >
                Withdraw
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
