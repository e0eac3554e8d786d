import { createServer, type Server } from 'node:http';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import Provider from 'oidc-provider';

/** The person the provider signs in next, as the claims it asserts. */
export interface ProviderUser {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  groups?: string[];
}

/** How the ID token of the next token response is spoiled, to check the gateway refuses it. */
export type IdTokenTampering = 'none' | 'signature' | 'nonce' | 'audience' | 'issuer';

export interface TestOpenIdProvider {
  issuer: string;
  /** The next sign-in is this person's (the login and consent screens are skipped). */
  signInAs(user: ProviderUser): void;
  tamperNextIdToken(how: IdTokenTampering): void;
  close(): Promise<void>;
}

/**
 * A real, certified OpenID Provider (oidc-provider) on a loopback port, with one confidential client. Its login
 * and consent screens answer at once for the person set by `signInAs`. A middleware after the token endpoint can
 * spoil the next ID token: a flipped signature byte, or a nonce, audience or issuer changed and re-signed with the
 * provider's own key (so only the claim check can catch it).
 */
export async function startOpenIdProvider(client: {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
}): Promise<TestOpenIdProvider> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  const issuer = `http://127.0.0.1:${port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const users = new Map<string, ProviderUser>();
  let next: ProviderUser | undefined;
  let tampering: IdTokenTampering = 'none';

  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: client.redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' }] },
    findAccount: async (_context: unknown, id: string) => {
      const user = users.get(id);
      return user === undefined ? undefined : { accountId: id, claims: async () => ({ ...user }) };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
    // The scope's claims in the ID token itself (the gateway reads only the ID token).
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_context: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    pkce: { required: () => true },
    cookies: { keys: ['a test cookie key, not a secret'] },
  });

  provider.use(async (context, nextMiddleware) => {
    if (context.path.startsWith('/interaction/')) {
      const user = next;
      if (user === undefined) throw new Error('signInAs was not called before the sign-in');
      users.set(user.sub, user);
      const details = await provider.interactionDetails(context.req, context.res);
      const grant = new provider.Grant({ accountId: user.sub, clientId: String(details.params.client_id) });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      const url = await provider.interactionResult(
        context.req,
        context.res,
        { login: { accountId: user.sub }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      );
      context.redirect(url);
      return;
    }
    await nextMiddleware();
    if (context.path === '/token' && context.method === 'POST' && tampering !== 'none') {
      const body = context.body as { id_token?: string };
      if (typeof body?.id_token === 'string') body.id_token = spoil(body.id_token, tampering, privateKey);
      tampering = 'none';
    }
  });
  server.on('request', provider.callback());

  return {
    issuer,
    signInAs(user) {
      next = user;
    },
    tamperNextIdToken(how) {
      tampering = how;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function spoil(idToken: string, how: IdTokenTampering, key: KeyObject): string {
  const [header, payload, signature] = idToken.split('.') as [string, string, string];
  if (how === 'signature') {
    // A byte in the middle of the signature (the last character may only carry padding bits).
    const bytes = Buffer.from(signature, 'base64url');
    bytes[bytes.length >> 1]! ^= 0x01;
    return `${header}.${payload}.${bytes.toString('base64url')}`;
  }
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  if (how === 'nonce') claims.nonce = 'a-nonce-this-sign-in-never-sent';
  if (how === 'audience') claims.aud = 'another-client';
  if (how === 'issuer') claims.iss = 'http://127.0.0.1:1';
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signed = sign('sha256', Buffer.from(`${header}.${body}`), key).toString('base64url');
  return `${header}.${body}.${signed}`;
}
