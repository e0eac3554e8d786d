import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  VerifiedRegistrationResponse,
} from '@simplewebauthn/server';
import { invalidRequest } from '../canonical/errors.js';
import type { IdentityFactorRepository, Passkey } from '../storage/identity-factor-types.js';
import type { SignInChallenges } from './sign-in-challenges.js';

/** Where the gateway is served: the WebAuthn relying party is its host name, the origin its scheme, host and port. */
export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
}

/** The relying party of a public base URL (`https://gateway.example.com` → id `gateway.example.com`). */
export function relyingPartyOf(publicBaseUrl: string, name = 'Tollgate'): RelyingParty {
  const url = new URL(publicBaseUrl);
  return { id: url.hostname, origin: url.origin, name };
}

export interface PasskeyRegistrationStart {
  token: string;
  options: PublicKeyCredentialCreationOptionsJSON;
}

export interface PasskeySignInStart {
  token: string;
  options: PublicKeyCredentialRequestOptionsJSON;
}

interface ChallengePayload {
  challenge: string;
  origin: string;
  rpId: string;
}

const MAX_PASSKEYS = 20;

/**
 * Passkeys (WebAuthn via @simplewebauthn/server): registration by a signed-in account, then sign-in as a second
 * factor (after the password) or on their own (discoverable credentials: the authenticator names the account).
 * Each ceremony's challenge is a single-use sign-in challenge, so it works across instances and cannot be replayed.
 */
export class Passkeys {
  constructor(
    private readonly store: IdentityFactorRepository,
    private readonly challenges: SignInChallenges,
    private readonly now: () => number = Date.now,
  ) {}

  list(accountId: string): Promise<Passkey[]> {
    return this.store.listPasskeys(accountId);
  }

  async startRegistration(
    account: { id: string; email: string },
    party: RelyingParty,
  ): Promise<PasskeyRegistrationStart> {
    const existing = await this.store.listPasskeys(account.id);
    if (existing.length >= MAX_PASSKEYS) throw invalidRequest(`An account may have at most ${MAX_PASSKEYS} passkeys.`);
    const { generateRegistrationOptions } = await webAuthn();
    const options = await generateRegistrationOptions({
      rpName: party.name,
      rpID: party.id,
      userName: account.email,
      userID: new TextEncoder().encode(account.id),
      attestationType: 'none',
      excludeCredentials: existing.map((passkey) => ({ id: passkey.id, transports: passkey.transports })),
      // Discoverable, so the same passkey signs in without an email typed first.
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
    const payload: ChallengePayload = { challenge: options.challenge, origin: party.origin, rpId: party.id };
    const { token } = await this.challenges.issue('passkey_register', account.id, payload);
    return { token, options };
  }

  async finishRegistration(accountId: string, token: string, response: unknown, name: string): Promise<Passkey> {
    const challenge = await this.challenges.find('passkey_register', token);
    if (challenge === null || challenge.accountId !== accountId || !(await this.challenges.consume(challenge))) {
      throw invalidRequest('The passkey set-up expired. Start again.');
    }
    const payload = JSON.parse(challenge.payload) as ChallengePayload;
    const { verifyRegistrationResponse } = await webAuthn();
    let verification: VerifiedRegistrationResponse;
    try {
      verification = await verifyRegistrationResponse({
        response: response as RegistrationResponseJSON,
        expectedChallenge: payload.challenge,
        expectedOrigin: payload.origin,
        expectedRPID: payload.rpId,
        requireUserVerification: false,
      });
    } catch (error) {
      throw invalidRequest(`The passkey could not be verified: ${(error as Error).message}`);
    }
    if (!verification.verified) throw invalidRequest('The passkey could not be verified.');
    const { credential } = verification.registrationInfo;
    const passkey: Passkey = {
      id: credential.id,
      accountId,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      counter: credential.counter,
      transports: credential.transports ?? [],
      name,
      createdAt: this.now(),
      lastUsedAt: null,
    };
    if ((await this.store.findPasskey(passkey.id)) !== null)
      throw invalidRequest('This passkey is registered already.');
    await this.store.addPasskey(passkey);
    return passkey;
  }

  /**
   * Options for a sign-in ceremony. With an account (the second step after a password) only its passkeys are
   * offered; without one (passwordless) the authenticator picks a discoverable credential.
   */
  async startSignIn(party: RelyingParty, accountId: string | null): Promise<PasskeySignInStart> {
    const allowed = accountId === null ? [] : await this.store.listPasskeys(accountId);
    const { generateAuthenticationOptions } = await webAuthn();
    const options = await generateAuthenticationOptions({
      rpID: party.id,
      userVerification: accountId === null ? 'required' : 'preferred',
      ...(accountId === null
        ? {}
        : { allowCredentials: allowed.map((passkey) => ({ id: passkey.id, transports: passkey.transports })) }),
    });
    const payload: ChallengePayload = { challenge: options.challenge, origin: party.origin, rpId: party.id };
    const { token } = await this.challenges.issue('passkey_sign_in', accountId, payload);
    return { token, options };
  }

  /**
   * The account the assertion proves, or null (unknown passkey, another account's, bad signature, spent or
   * expired challenge). Passwordless sign-in needs user verification: the passkey stands for both factors.
   */
  async finishSignIn(token: string, response: unknown): Promise<{ accountId: string; passkey: Passkey } | null> {
    const challenge = await this.challenges.find('passkey_sign_in', token);
    if (challenge === null || !(await this.challenges.consume(challenge))) return null;
    const payload = JSON.parse(challenge.payload) as ChallengePayload;
    const assertion = response as AuthenticationResponseJSON;
    if (typeof assertion?.id !== 'string') return null;
    const passkey = await this.store.findPasskey(assertion.id);
    if (passkey === null) return null;
    if (challenge.accountId !== null && passkey.accountId !== challenge.accountId) return null;
    try {
      const { verifyAuthenticationResponse } = await webAuthn();
      const verification = await verifyAuthenticationResponse({
        response: assertion,
        expectedChallenge: payload.challenge,
        expectedOrigin: payload.origin,
        expectedRPID: payload.rpId,
        credential: {
          id: passkey.id,
          publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64url')),
          counter: passkey.counter,
          transports: passkey.transports,
        },
        requireUserVerification: challenge.accountId === null,
      });
      if (!verification.verified) return null;
      await this.store.touchPasskey(passkey.id, verification.authenticationInfo.newCounter, this.now());
    } catch {
      return null;
    }
    return { accountId: passkey.accountId, passkey };
  }

  async rename(accountId: string, id: string, name: string): Promise<boolean> {
    return this.store.renamePasskey(accountId, id, name);
  }

  async remove(accountId: string, id: string): Promise<boolean> {
    return this.store.deletePasskey(accountId, id);
  }
}

/**
 * @simplewebauthn/server (with its ASN.1 and X.509 libraries, ~5 MB of heap) is loaded by the first passkey
 * ceremony, not at start-up: a gateway whose accounts use no passkeys never carries it. Node caches the module.
 */
function webAuthn(): Promise<typeof import('@simplewebauthn/server')> {
  return import('@simplewebauthn/server');
}
