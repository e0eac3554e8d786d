import { createRequire } from 'node:module';
import type { BuildCompilerFromPool } from '@fastify/ajv-compiler';
import type { SerializerFactory } from '@fastify/fast-json-stringify-compiler';

/** What fastify's `schemaController.compilersFactory` takes (the validator as fastify's default builds it). */
interface CompilersFactory {
  buildValidator: BuildCompilerFromPool;
  buildSerializer: SerializerFactory;
}

// fastify's own dependencies, resolved from where fastify is installed: the versions it was released with.
const requireFromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));

/**
 * fastify's default schema compilers (Ajv, fast-json-stringify), loaded when a route first declares a schema
 * instead of when the app is built. Without this fastify requires both for every instance; the gateway's routes
 * validate with zod and declare no JSON schema, so serving never loads them (measured: ~1.5 MB of heap and 100
 * modules at start-up). A route with a schema gets the very same compilers, one pool per app as fastify makes.
 */
export function lazySchemaCompilers(): CompilersFactory {
  let validators: BuildCompilerFromPool | undefined;
  let serializers: SerializerFactory | undefined;
  return {
    buildValidator(externalSchemas, options) {
      validators ??= (requireFromFastify('@fastify/ajv-compiler') as () => BuildCompilerFromPool)();
      return validators(externalSchemas, options);
    },
    buildSerializer(externalSchemas, options) {
      serializers ??= (requireFromFastify('@fastify/fast-json-stringify-compiler') as () => SerializerFactory)();
      return serializers(externalSchemas, options);
    },
  };
}
