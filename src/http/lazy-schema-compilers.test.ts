/**
 * fastify's JSON-schema compilers, loaded on first use (lazy-schema-compilers.ts): a route that declares a schema
 * still has its body validated and its reply serialized by them, over real HTTP.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, expect, it } from 'vitest';
import { lazySchemaCompilers } from './lazy-schema-compilers.js';

let app: FastifyInstance | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
});

it("validates a body and serializes a reply with fastify's own compilers when a route declares schemas", async () => {
  app = Fastify({ schemaController: { compilersFactory: lazySchemaCompilers() } });
  app.post(
    '/echo',
    {
      schema: {
        body: { type: 'object', required: ['n'], properties: { n: { type: 'integer', minimum: 1 } } },
        // The serializer writes only the declared properties.
        response: { 200: { type: 'object', properties: { n: { type: 'integer' } } } },
      },
    },
    async (request) => ({ ...(request.body as { n: number }), secret: 'not serialized' }),
  );
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  const post = (body: unknown) =>
    fetch(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  const ok = await post({ n: 3 });
  expect(ok.status).toBe(200);
  expect(await ok.text()).toBe('{"n":3}');

  const invalid = await post({ n: 0 });
  expect(invalid.status).toBe(400);
  expect(((await invalid.json()) as { message: string }).message).toContain('must be >= 1');
});
