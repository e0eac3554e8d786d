/**
 * A refusal about members and invitations, with the HTTP status and code the dashboard API answers with
 * (docs/dashboard-api.md). The message is written for the person at the members page.
 */
export class OrganisationError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = 'OrganisationError';
  }
}

export const lastOwner = () =>
  new OrganisationError(
    409,
    'last_owner',
    'An organisation needs at least one owner: make another member an owner first.',
  );

export const ownerOnly = () =>
  new OrganisationError(403, 'owner_only', 'Only an owner may make an owner, or change or remove one.');

export const notAMember = (accountId: string) =>
  new OrganisationError(
    404,
    'not_found',
    `No member with account id '${accountId}' in this organisation.`,
    'accountId',
  );
