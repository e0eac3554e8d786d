import { z } from 'zod';
import { ORGANISATION_ROLES } from '../storage/organisation-types.js';

const domain = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9.-]+\.[a-z]{2,}$/, 'must be a domain name such as example.com');

/**
 * Where the people a provider signs in become members, and with which role. The email's domain picks an
 * organisation from `domains`; `organisation` takes everyone no domain rule names. The role comes from
 * `roleClaim` through `roles` (claim value → role), `defaultRole` when no value maps.
 */
const provisioningSchema = z
  .object({
    organisation: z.string().min(1).max(100).optional(),
    domains: z
      .record(z.string().regex(/^[A-Za-z0-9.-]+\.[A-Za-z]{2,}$/, 'must be a domain name'), z.string().min(1).max(100))
      .default({}),
    roleClaim: z.string().min(1).optional(),
    roles: z.record(z.string().min(1), z.enum(ORGANISATION_ROLES)).default({}),
    defaultRole: z.enum(ORGANISATION_ROLES).default('developer'),
  })
  .strict()
  .refine((value) => value.organisation !== undefined || Object.keys(value.domains).length > 0, {
    message: 'name an organisation, or domains with their organisations',
  });

export type SsoProvisioningSettings = z.output<typeof provisioningSchema>;

/** One OpenID Connect provider the dashboard offers as "Sign in with <name>". */
export const ssoProviderSchema = z
  .object({
    /** In URLs (`/api/auth/sso/<id>/start`) and in the link table: keep it stable once people signed in. */
    id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'must be lower-case letters, digits and dashes (at most 40)'),
    /** Shown on the button: "Sign in with <name>". */
    name: z.string().min(1).max(60),
    /** The issuer; its `/.well-known/openid-configuration` is read at start-up of the first sign-in. */
    issuer: z
      .string()
      .url()
      .refine(
        (value) => /^https:\/\//.test(value) || isLoopbackUrl(value),
        'must be https:// (http:// only on loopback)',
      ),
    clientId: z.string().min(1),
    /** Or SSO_<ID>_CLIENT_SECRET in the environment (the id upper-cased, dashes as underscores). */
    clientSecret: z.string().min(1),
    /** When set, only emails of these domains may sign in through this provider. */
    allowedDomains: z.array(domain).default([]),
    /** Password sign-in is refused for emails of these domains: they must use this provider. */
    requiredForDomains: z.array(domain).default([]),
    /** An ID-token claim (a string or a list of strings) that makes the person an operator (`admin`)… */
    roleClaim: z.string().min(1).optional(),
    /** …when it holds one of these values. Without `roleClaim`, everyone provisioned is a `user`. */
    adminValues: z.array(z.string().min(1)).default(['admin']),
    /** Optional: people signing in are added to organisations, with a role from a claim. */
    provisioning: provisioningSchema.optional(),
  })
  .strict();

export const ssoProvidersSchema = z
  .array(ssoProviderSchema)
  .default([])
  .refine((providers) => new Set(providers.map((provider) => provider.id)).size === providers.length, {
    message: 'provider ids must be unique',
  })
  .refine(
    (providers) => {
      const domains = providers.flatMap((provider) => provider.requiredForDomains);
      return new Set(domains).size === domains.length;
    },
    { message: 'a domain can be required for one provider only' },
  );

export type SsoProviderSettings = z.output<typeof ssoProviderSchema>;

function isLoopbackUrl(value: string): boolean {
  try {
    const { protocol, hostname } = new URL(value);
    return protocol === 'http:' && (hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]');
  } catch {
    return false;
  }
}

/** `SSO_<ID>_CLIENT_SECRET`, filled into the file's providers (secrets belong in the environment, not the file). */
export function ssoSecretsFromEnvironment(
  fileProviders: unknown,
  env: Readonly<Record<string, string | undefined>>,
): unknown {
  if (!Array.isArray(fileProviders)) return fileProviders;
  return fileProviders.map((provider: unknown) => {
    if (provider === null || typeof provider !== 'object' || !('id' in provider) || typeof provider.id !== 'string')
      return provider;
    const secret = env[`SSO_${provider.id.toUpperCase().replaceAll('-', '_')}_CLIENT_SECRET`];
    return secret === undefined || secret === '' ? provider : { ...provider, clientSecret: secret };
  });
}
