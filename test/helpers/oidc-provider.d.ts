/**
 * The part of oidc-provider (a certified OpenID Provider, tests only) the SSO tests use. The package ships no
 * types of its own.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface KoaContext {
    path: string;
    method: string;
    req: IncomingMessage;
    res: ServerResponse;
    body: unknown;
    status: number;
    redirect(url: string): void;
  }

  interface Grant {
    addOIDCScope(scope: string): void;
    save(): Promise<string>;
  }

  interface InteractionDetails {
    uid: string;
    prompt: { name: string };
    params: Record<string, unknown>;
  }

  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
    use(middleware: (context: KoaContext, next: () => Promise<void>) => Promise<void>): void;
    interactionDetails(request: IncomingMessage, response: ServerResponse): Promise<InteractionDetails>;
    interactionResult(
      request: IncomingMessage,
      response: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<string>;
    Grant: new (properties: {
      accountId: string;
      clientId: string;
    }) => Grant;
    proxy: boolean;
  }
}
