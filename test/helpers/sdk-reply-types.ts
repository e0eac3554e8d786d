/**
 * Checks replies against the newest SDKs' own type declarations at run time. Each JSON value becomes a constant
 * passed to a function typed with the SDK's type in a generated TypeScript file, which the compiler checks against
 * the `.d.ts` files installed in the agent test package: required fields, field types and enum values are exactly what the SDK
 * declares, with no hand-copied schema to fall behind it. A field the SDK does not declare is allowed (the value is
 * a declared constant, which gets no excess-property check), as the SDKs ignore it: the gateway's own `cost` fields,
 * DeepSeek's `reasoning_content`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { AGENTS_PACKAGE_DIR } from './agents-package.js';

const GENAI_TYPES = join(AGENTS_PACKAGE_DIR, 'node_modules/@google/genai/dist/genai.d.ts');

/**
 * The getters of @google/genai's `GenerateContentResponse` class (`text`, `functionCalls`…), read from its
 * declaration: they are computed from the reply, not part of it. `sdkHttpResponse` is what the SDK adds itself.
 */
function genaiComputedFields(): string[] {
  const declaration = /export declare class GenerateContentResponse \{(.*?)\n\}/s.exec(
    readFileSync(GENAI_TYPES, 'utf8'),
  );
  if (declaration === null) throw new Error('GenerateContentResponse not found in the @google/genai types');
  return ['sdkHttpResponse', ...[...declaration[1]!.matchAll(/^\s+get (\w+)\(\)/gm)].map((match) => match[1]!)];
}

/** The SDK types a reply is checked against, as TypeScript type expressions resolved from the agent test package. */
const SDK_TYPES = {
  ChatCompletion: "import('openai/resources/chat/completions').ChatCompletion",
  ChatCompletionChunk: "import('openai/resources/chat/completions').ChatCompletionChunk",
  Message: "import('@anthropic-ai/sdk/resources/messages').Message",
  // Anthropic's streams carry `ping` events, which its SDK skips before typing the others.
  RawMessageStreamEvent: "import('@anthropic-ai/sdk/resources/messages').RawMessageStreamEvent | { type: 'ping' }",
  Response: "import('openai/resources/responses/responses').Response",
  ResponseStreamEvent: "import('openai/resources/responses/responses').ResponseStreamEvent",
  GenerateContentResponse: `Omit<import('@google/genai').GenerateContentResponse, ${genaiComputedFields()
    .map((name) => `'${name}'`)
    .join(' | ')}>`,
} as const;
export type SdkTypeName = keyof typeof SDK_TYPES;

export interface TypedReply {
  /** Says which reply a mismatch is in. */
  label: string;
  type: SdkTypeName;
  value: unknown;
}

/**
 * `Wire<T>`: T as JSON carries it. @google/genai declares its enums as TypeScript enums, which no string literal
 * is assignable to; their string values are. An optional field may be `null`: OpenAI's API sends `"user": null`, and
 * `"usage": null` until a stream's end, where its SDK declares them optional. The index signature lets an object
 * carry only fields the SDK does not declare (a delta of DeepSeek's `reasoning_content` alone), which TypeScript
 * refuses for a type whose fields are all optional. `Mutable<T>` undoes the `readonly` that `as const` adds (it
 * keeps string values as their literal types, which enum-like fields need).
 */
const PRELUDE = [
  // biome-ignore lint/suspicious/noTemplateCurlyInString: TypeScript source: a template literal type, not a JS template.
  'type Wire<T> = T extends string ? `${T}` : T extends ReadonlyArray<infer U> ? Wire<U>[] : T extends object ? { [K in keyof T]: Wire<T[K]> | (undefined extends T[K] ? null : never) } & { [field: string]: unknown } : T;',
  'type Mutable<T> = T extends object ? { -readonly [K in keyof T]: Mutable<T[K]> } : T;',
  'declare function accepts<T>(value: Wire<T>): void;',
];

const CHECK_FILE = join(AGENTS_PACKAGE_DIR, '__sdk_reply_types__.ts');

/** Every way `replies` differ from their SDK types, as `label: compiler message`; empty when all conform. */
export function sdkTypeMismatches(replies: TypedReply[]): string[] {
  // One reply a line, so a diagnostic's line says which reply it is about.
  const source = [
    ...PRELUDE,
    ...replies.map(
      (reply, index) =>
        `const reply${index} = ${JSON.stringify(reply.value)} as const; accepts<${SDK_TYPES[reply.type]}>(reply${index} as Mutable<typeof reply${index}>);`,
    ),
  ].join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    // No DOM library: the few DOM types the SDKs mention (fetch's Response in genai's sdkHttpResponse) are not wire data.
    lib: ['lib.es2022.d.ts'],
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, language, ...rest) =>
    name === CHECK_FILE
      ? ts.createSourceFile(name, source, language)
      : getSourceFile.call(host, name, language, ...rest);
  host.fileExists = (name) => name === CHECK_FILE || fileExists.call(host, name);
  host.readFile = (name) => (name === CHECK_FILE ? source : readFile.call(host, name));
  const program = ts.createProgram([CHECK_FILE], options, host);
  const file = program.getSourceFile(CHECK_FILE)!;
  return program.getSemanticDiagnostics(file).map((diagnostic) => {
    const line = file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line - PRELUDE.length;
    const label = replies[line]?.label ?? 'the type prelude';
    return `${label}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
  });
}
