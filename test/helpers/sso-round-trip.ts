import { expect } from 'vitest';
import { DashboardClient } from './dashboard-client.js';
import type { ProviderUser, TestOpenIdProvider } from './openid-provider.js';

/**
 * A browser's SSO round trip against a gateway: its start URL, the provider's authorisation endpoint and
 * interaction, back to the gateway's callback. Returns where the callback redirects and the dashboard client, now
 * carrying the session cookie when the sign-in succeeded.
 */
export async function ssoRoundTrip(
  gatewayUrl: string,
  provider: TestOpenIdProvider,
  providerId: string,
  user: ProviderUser,
  options: { dashboard?: DashboardClient; userAgent?: string } = {},
): Promise<{ dashboard: DashboardClient; redirectedTo: string }> {
  const dashboard = options.dashboard ?? new DashboardClient(gatewayUrl);
  if (dashboard.csrfToken === undefined) await dashboard.open();
  provider.signInAs(user);
  const start = await fetch(`${gatewayUrl}/api/auth/sso/${providerId}/start`, {
    redirect: 'manual',
    headers: { cookie: `tg_session=${dashboard.cookie}` },
  });
  expect(start.status).toBe(302);
  const stateCookie = /tg_sso_state=([^;]+)/.exec(start.headers.getSetCookie().join('\n'))![1]!;
  const jar = new Map<string, string>();
  let location = start.headers.get('location')!;
  for (let hop = 0; hop < 10 && location.startsWith(provider.issuer); hop++) {
    const reply = await fetch(location, {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([name, value]) => `${name}=${value}`).join('; ') },
    });
    for (const line of reply.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const [name, value] = pair!.split('=') as [string, string];
      jar.set(name, value);
    }
    location = new URL(reply.headers.get('location')!, location).href;
  }
  expect(location.startsWith(`${gatewayUrl}/api/auth/sso/${providerId}/callback?`)).toBe(true);
  const callback = await fetch(location, {
    redirect: 'manual',
    headers: {
      cookie: `tg_session=${dashboard.cookie}; tg_sso_state=${stateCookie}`,
      ...(options.userAgent === undefined ? {} : { 'user-agent': options.userAgent }),
    },
  });
  for (const line of callback.headers.getSetCookie()) {
    const match = /^tg_session=([^;]*)/.exec(line);
    if (match !== null) dashboard.cookie = match[1];
  }
  // The dashboard's CSRF token follows the new session cookie.
  await dashboard.open();
  return { dashboard, redirectedTo: callback.headers.get('location') ?? '' };
}
