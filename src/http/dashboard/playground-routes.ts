import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { hasScope, missingScope } from '../../keys/key-permissions.js';
import type { AuthenticatedKey } from '../../keys/key-service.js';
import type { OpenAIChatCall } from '../../protocols/openai-chat/openai-chat-route.js';
import type { RateLimitEnforcer } from '../rate-limit-hook.js';
import { parseInput } from './body-parsing.js';
import type { DashboardDependencies } from './dashboard-dependencies.js';
import { currentOrganisation } from './dashboard-session.js';

/** The route named in a playground request's usage record. */
export const PLAYGROUND_ROUTE = 'playground';

/** What the playground needs from the gateway: the `/v1` chat route's serving, and its rate-limit enforcement. */
export interface PlaygroundServices {
  serve: (call: OpenAIChatCall) => Promise<FastifyReply>;
  enforceRateLimit: RateLimitEnforcer;
}

const MAX_TEXT = 200_000;

/** The playground's form: a subset of a chat-completions request, in the dashboard's camelCase. */
export const playgroundBody = z
  .object({
    model: z.string().min(1).max(200),
    system: z.string().max(MAX_TEXT).optional(),
    messages: z
      .array(z.object({ role: z.enum(['user', 'assistant']), content: z.string().min(1).max(MAX_TEXT) }).strict())
      .min(1, 'Write a message first.')
      .max(200),
    temperature: z.number().min(0).max(2).optional(),
    maxTokens: z.number().int().min(1).max(1_000_000).optional(),
    reasoningEffort: z.enum(['low', 'medium', 'high']).optional(),
    tools: z
      .array(
        z
          .object({
            name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'Tool names are 1 to 64 letters, digits, _ or -.'),
            description: z.string().max(2_000).optional(),
            parameters: z.record(z.string(), z.unknown()).optional(),
          })
          .strict(),
      )
      .max(20)
      .optional(),
  })
  .strict();

export type PlaygroundBody = z.output<typeof playgroundBody>;

/**
 * The chat-completions request a playground form stands for: what "View code" shows, and what the pipeline is fed,
 * so the two cannot differ. Streamed, with usage (and its cost) in the last chunk.
 */
export function chatCompletionsBody(body: PlaygroundBody): Record<string, unknown> {
  return {
    model: body.model,
    messages: [
      ...(body.system === undefined || body.system === '' ? [] : [{ role: 'system', content: body.system }]),
      ...body.messages,
    ],
    ...(body.temperature === undefined ? {} : { temperature: body.temperature }),
    ...(body.maxTokens === undefined ? {} : { max_tokens: body.maxTokens }),
    ...(body.reasoningEffort === undefined ? {} : { reasoning_effort: body.reasoningEffort }),
    ...(body.tools === undefined || body.tools.length === 0
      ? {}
      : {
          tools: body.tools.map((tool) => ({
            type: 'function',
            function: {
              name: tool.name,
              ...(tool.description === undefined ? {} : { description: tool.description }),
              parameters: tool.parameters ?? { type: 'object', properties: {} },
            },
          })),
        }),
    stream: true,
    stream_options: { include_usage: true },
  };
}

/**
 * `POST /api/playground/chat`: one playground reply, streamed as OpenAI chat-completion chunks. It is a request of the
 * session's organisation through the same pipeline as `/v1/chat/completions`: the organisation's playground key (its limits),
 * the tier's rate limit, admission, holds and settlement, recorded with route `playground`. A refusal before the
 * reply starts is the dashboard's error shape with the API's code and words; one after is an in-stream error chunk.
 */
export function registerPlaygroundRoutes(
  api: FastifyInstance,
  deps: DashboardDependencies,
  services: PlaygroundServices,
): void {
  api.post('/playground/chat', { config: { permission: 'models:call' } }, async (request, reply) => {
    const { organisation } = currentOrganisation(request);
    const body = parseInput(playgroundBody, request.body);
    const auth: AuthenticatedKey = await deps.keys.authenticatePlayground(organisation.id);
    // The key's own scopes, as the API key guard checks them on /v1 (an admin may have narrowed them).
    if (!hasScope(auth.key.permissions, 'models:use')) throw missingScope(['models:use'], false);
    await services.enforceRateLimit(auth, reply, false);
    return services.serve({
      body: chatCompletionsBody(body),
      auth,
      requestId: request.id,
      reply,
      route: PLAYGROUND_ROUTE,
    });
  });
}
