/**
 * fast-check generators of hostile HTTP input for the fuzz suite (test/e2e/fuzz.test.ts): malformed and
 * adversarial JSON bodies, headers, and raw HTTP request heads. Bodies are built as raw text (or bytes), so
 * they can hold what JSON.stringify never writes: invalid numbers, duplicate keys, broken UTF-8.
 */
import fc from 'fast-check';

export interface FuzzBody {
  /** What goes on the wire. */
  payload: string | Uint8Array;
  /** A label for failure reports. */
  kind: string;
}

/** JSON text fragments that are hostile as a value anywhere. Some are not valid JSON on purpose. */
const HOSTILE_LITERALS = [
  '1e999',
  '-1e999',
  '1e308',
  '-1e308',
  '9007199254740993',
  '-9007199254740993',
  '123456789012345678901234567890',
  '-0',
  '0.1e-400',
  '1E+400',
  '4.9e-324',
  'NaN',
  'Infinity',
  '-Infinity',
  '0x1F',
  '01',
  '.5',
  '+1',
  'undefined',
  'null',
  'true',
  'false',
  '[]',
  '{}',
  '""',
  '"\\u0000"',
  '"\\ud800"',
  '"\\udfff\\ud800"',
  '"\\u202e\\ufeff"',
  '{"__proto__":{"polluted":"yes"}}',
  '{"constructor":{"prototype":{"polluted":"yes"}}}',
  '{"prototype":{"polluted":"yes"}}',
  '"__proto__"',
  '"constructor"',
  '"toString"',
  '"hasOwnProperty"',
  '[{"__proto__":null}]',
  '"\\r\\nSet-Cookie: injected=1"',
  '"../../../../etc/passwd"',
  '"\' OR 1=1 --"',
  '"${jndi:ldap://x/y}"',
  '"<script>alert(1)</script>"',
  '{"$where":"1"}',
  '"%00%0d%0a"',
  '[[[[[[[[[[]]]]]]]]]]',
  '"<|endoftext|>"',
  '"a <|im_start|>system<|im_end|> b"',
  '"<|fim_prefix|>"',
] as const;

const HOSTILE_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '',
  ' ',
  '\u0000',
  'model',
  'messages',
  'stream',
  'max_tokens',
] as const;

/** Any code units, lone surrogates included, as a JSON string literal. */
const anyString = fc.string({ unit: 'binary', maxLength: 64 }).map((text) => JSON.stringify(text));
const longString = fc.integer({ min: 1_000, max: 300_000 }).map((length) => JSON.stringify('x'.repeat(length)));

/** Nesting well past the gateway's depth limit (and sometimes up to stack-overflow depths for naive code). */
export const deepNesting = fc
  .tuple(fc.integer({ min: 60, max: 50_000 }), fc.constantFrom('array', 'object', 'mixed'))
  .map(([depth, shape]) => {
    if (shape === 'array') return '['.repeat(depth) + ']'.repeat(depth);
    if (shape === 'object') return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    return '[{"a":'.repeat(depth) + '1' + '}]'.repeat(depth);
  });

export const hostileValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...HOSTILE_LITERALS) },
  { weight: 2, arbitrary: anyString },
  { weight: 1, arbitrary: longString },
  { weight: 1, arbitrary: deepNesting },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: fc.double().map((value) => (Number.isFinite(value) ? String(value) : 'null')) },
  { weight: 1, arbitrary: fc.bigInt().map(String) },
);

/** Text a model endpoint accepts as content, but that trips naive code: tokenizer specials, long runs, odd Unicode. */
export const hostileText: fc.Arbitrary<string> = fc
  .oneof(
    fc.constantFrom(
      '<|endoftext|>',
      'a <|im_start|>system<|im_end|> b',
      '<|fim_prefix|><|fim_suffix|>',
      '<|endofprompt|>',
      '\u0000',
      '\ud800',
      '\u202e\u200b\ufeff',
      '𝕏'.repeat(500),
      '\r\n'.repeat(500),
    ),
    fc
      .integer({ min: 300, max: 300_000 })
      .chain((length) =>
        fc.constantFrom('x', '.', '9', 'é', 'ab').map((unit) => unit.repeat(Math.ceil(length / unit.length))),
      ),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 200 }),
  )
  .map((text) => JSON.stringify(text));

const hostileKey = fc.oneof(
  fc.constantFrom(...HOSTILE_KEYS),
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.constant('k'.repeat(5_000)),
);

const HOLE = '"@@fuzz-hole@@"';

/** A valid-looking request with one spot replaced by a hostile fragment. */
function mutate(
  template: Record<string, unknown>,
  paths: ReadonlyArray<ReadonlyArray<string | number>>,
  values: fc.Arbitrary<string> = hostileValue,
): fc.Arbitrary<FuzzBody> {
  return fc.tuple(fc.constantFrom(...paths), values).map(([path, fragment]) => {
    const copy = structuredClone(template);
    let cursor: Record<string | number, unknown> = copy;
    for (const segment of path.slice(0, -1)) cursor = cursor[segment] as Record<string | number, unknown>;
    cursor[path.at(-1)!] = '@@fuzz-hole@@';
    return { kind: `mutate ${path.join('.')}`, payload: JSON.stringify(copy).replace(HOLE, fragment) };
  });
}

/** A valid request plus one extra member with a hostile key (duplicates of real fields included). */
function extraMember(template: Record<string, unknown>): fc.Arbitrary<FuzzBody> {
  return fc.tuple(hostileKey, hostileValue, fc.boolean()).map(([key, fragment, first]) => {
    const member = `${JSON.stringify(key)}:${fragment}`;
    const body = JSON.stringify(template);
    return {
      kind: `extra member ${JSON.stringify(key).slice(0, 40)}`,
      payload: first ? `{${member},${body.slice(1)}` : `${body.slice(0, -1)},${member}}`,
    };
  });
}

/** A valid request cut short, or with bytes that are not UTF-8 inside a string. */
function brokenEncoding(template: Record<string, unknown>): fc.Arbitrary<FuzzBody> {
  const text = JSON.stringify(template);
  return fc.oneof(
    fc.integer({ min: 0, max: text.length - 1 }).map((cut) => ({ kind: 'truncated', payload: text.slice(0, cut) })),
    fc.uint8Array({ minLength: 1, maxLength: 32 }).map((bytes) => {
      const marker = text.indexOf('hello');
      const encoder = new TextEncoder();
      const invalid = bytes.map((byte) => byte | 0x80);
      return {
        kind: 'invalid utf-8',
        payload: new Uint8Array([
          ...encoder.encode(text.slice(0, marker)),
          ...invalid,
          ...encoder.encode(text.slice(marker)),
        ]),
      };
    }),
    fc
      .constantFrom('', ' ', 'null', '[]', '"text"', '1', '{', '}', '{"a":1,}', '\ufeff{}', '{"a":1}{"b":2}')
      .map((payload) => ({ kind: 'tiny', payload })),
  );
}

/**
 * Hostile bodies for a JSON endpoint whose valid request looks like `template`. `freeFormPaths` are spots the
 * protocol passes on without a schema (tool parameters, vendor extensions): deep nesting goes there often,
 * since only there does it get past validation to the code behind it.
 */
export function hostileBody(
  template: Record<string, unknown>,
  paths: ReadonlyArray<ReadonlyArray<string | number>>,
  special: {
    freeFormPaths?: ReadonlyArray<ReadonlyArray<string | number>>;
    textPaths?: ReadonlyArray<ReadonlyArray<string | number>>;
  } = {},
): fc.Arbitrary<FuzzBody> {
  const freeForm = special.freeFormPaths ?? [];
  const text = special.textPaths ?? [];
  return fc.oneof(
    { weight: 4, arbitrary: mutate(template, paths) },
    {
      weight: freeForm.length === 0 ? 0 : 2,
      arbitrary: mutate(template, freeForm.length === 0 ? paths : freeForm, deepNesting),
    },
    { weight: text.length === 0 ? 0 : 2, arbitrary: mutate(template, text.length === 0 ? paths : text, hostileText) },
    { weight: 2, arbitrary: extraMember(template) },
    { weight: 2, arbitrary: brokenEncoding(template) },
    { weight: 1, arbitrary: deepNesting.map((payload) => ({ kind: 'deep nesting', payload })) },
    {
      weight: 1,
      arbitrary: fc
        .jsonValue({ maxDepth: 4 })
        .map((value) => ({ kind: 'random json', payload: JSON.stringify(value) })),
    },
  );
}

// Tool schemas are free-form JSON the gateway passes on: the deepest legitimate spot for hostile values.
const PARAMETERS = { type: 'object', properties: { city: { type: 'string' } } };

export const OPENAI_TEMPLATE = {
  model: 'beta-5.4',
  max_tokens: 16,
  temperature: 0.5,
  stream: false,
  messages: [{ role: 'user', content: 'hello' }],
  tools: [{ type: 'function', function: { name: 'weather', parameters: PARAMETERS } }],
};
export const OPENAI_PATHS = [
  ['model'],
  ['messages'],
  ['messages', 0],
  ['messages', 0, 'role'],
  ['messages', 0, 'content'],
  ['max_tokens'],
  ['temperature'],
  ['stream'],
  ['tools'],
  ['tools', 0, 'function', 'parameters'],
  ['tools', 0, 'function', 'parameters', 'properties', 'city'],
  ['tool_choice'],
  ['response_format'],
  ['stop'],
  ['n'],
  ['stream_options'],
  ['logit_bias'],
  ['metadata'],
  ['vendor_extension'],
] as const;
export const OPENAI_SPECIAL_PATHS = {
  freeFormPaths: [['tools', 0, 'function', 'parameters', 'properties', 'city'], ['vendor_extension']],
  textPaths: [['messages', 0, 'content'], ['tools', 0, 'function', 'description'], ['user']],
};

export const RESPONSES_TEMPLATE = {
  model: 'gamma-2.5-pro',
  max_output_tokens: 16,
  stream: false,
  instructions: 'be brief',
  input: [
    { role: 'user', content: [{ type: 'input_text', text: 'hello' }] },
    { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"Oslo"}' },
    { type: 'function_call_output', call_id: 'call_1', output: 'cold' },
  ],
  tools: [{ type: 'function', name: 'weather', parameters: PARAMETERS }],
};
export const RESPONSES_PATHS = [
  ['model'],
  ['input'],
  ['input', 0],
  ['input', 0, 'role'],
  ['input', 0, 'content'],
  ['input', 0, 'content', 0, 'type'],
  ['input', 1],
  ['input', 1, 'call_id'],
  ['input', 1, 'arguments'],
  ['input', 2, 'call_id'],
  ['input', 2, 'output'],
  ['instructions'],
  ['max_output_tokens'],
  ['stream'],
  ['tools'],
  ['tools', 0, 'type'],
  ['tools', 0, 'parameters'],
  ['tool_choice'],
  ['text'],
  ['reasoning'],
  ['include'],
  ['store'],
  ['previous_response_id'],
  ['metadata'],
  ['vendor_extension'],
] as const;
export const RESPONSES_SPECIAL_PATHS = {
  freeFormPaths: [['tools', 0, 'parameters', 'properties', 'city'], ['vendor_extension']],
  textPaths: [['input', 0, 'content', 0, 'text'], ['instructions'], ['input', 2, 'output']],
};

export const ANTHROPIC_TEMPLATE = {
  model: 'alpha-sonnet-5',
  max_tokens: 16,
  stream: false,
  messages: [{ role: 'user', content: 'hello' }],
  tools: [{ name: 'weather', input_schema: PARAMETERS }],
};
export const ANTHROPIC_PATHS = [
  ['model'],
  ['messages'],
  ['messages', 0],
  ['messages', 0, 'role'],
  ['messages', 0, 'content'],
  ['max_tokens'],
  ['temperature'],
  ['stream'],
  ['system'],
  ['tools'],
  ['tools', 0, 'input_schema'],
  ['tools', 0, 'input_schema', 'properties', 'city'],
  ['tool_choice'],
  ['thinking'],
  ['stop_sequences'],
  ['metadata'],
  ['top_k'],
  ['vendor_extension'],
] as const;
export const ANTHROPIC_SPECIAL_PATHS = {
  freeFormPaths: [['tools', 0, 'input_schema', 'properties', 'city'], ['vendor_extension']],
  textPaths: [['messages', 0, 'content'], ['system'], ['tools', 0, 'description']],
};

/*
 * The dashboard templates are invalid in two fields, so that no single mutation can turn them into a request
 * that rightly succeeds (an account or key created by a hostile-but-valid value is not a finding). The model
 * endpoints need no such care: the fuzzed account has no balance, so a valid request is a 403.
 */
export const CREDENTIALS_TEMPLATE = { email: 'not-an-email hello', password: 'short' };
export const CREDENTIALS_PATHS = [['email'], ['password']] as const;

export const KEY_TEMPLATE = { name: 'hello', expiresInDays: 0, scope: 'admin' };
export const KEY_PATHS = [['name'], ['expiresInDays'], ['scope']] as const;

/** Request headers fetch can send: content types, credentials and odd values (CR/LF/NUL are for raw sockets). */
export function hostileHeaders(validAuthorization: Record<string, string>): fc.Arbitrary<Record<string, string>> {
  const printable = fc.string({
    unit: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)),
    maxLength: 200,
  });
  const contentType = fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=latin1',
    'APPLICATION/JSON',
    'application/json;;;',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/jsonp',
    'application/xml',
    '*/*',
  );
  const authorization = fc.oneof(
    { weight: 6, arbitrary: fc.constant(validAuthorization) },
    { weight: 1, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: printable.map((value) => ({ authorization: `Bearer ${value}` })) },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom('Bearer', 'Basic Zm9vOmJhcg==', 'Bearer sk-tg-', `Bearer ${'a'.repeat(4_000)}`)
        .map((value) => ({ authorization: value })),
    },
  );
  const extra = fc.dictionary(
    fc.constantFrom(
      'x-request-id',
      'anthropic-version',
      'anthropic-beta',
      'x-forwarded-for',
      'x-forwarded-proto',
      'accept',
      'accept-encoding',
      'content-encoding',
      'x-api-key',
      'cookie',
      'x-simulator-fault',
    ),
    printable,
    { maxKeys: 3 },
  );
  return fc
    .tuple(contentType, authorization, extra)
    .map(([type, auth, headers]) => ({ ...headers, ...auth, 'content-type': type }));
}

/**
 * Raw HTTP/1.1 request heads with what clients are not supposed to send: CR/LF inside values (header
 * injection), NUL bytes, obsolete line folding, bad names, conflicting Content-Length / Transfer-Encoding
 * (smuggling attempts), non-ASCII bytes.
 */
export function rawRequestHead(
  path: string,
  authorization: string,
): fc.Arbitrary<{ kind: string; head: string; body: string }> {
  const body = '{"model":"beta-5.4","messages":[{"role":"user","content":"hi"}]}';
  const byteString = fc.string({
    unit: fc.integer({ min: 0, max: 255 }).map((code) => String.fromCharCode(code)),
    maxLength: 40,
  });
  const injected = fc.constantFrom(
    'x\r\nInjected: yes',
    'x\rInjected: yes',
    'x\nInjected: yes',
    'x\r\n\r\nGET /injected HTTP/1.1\r\nHost: x',
    'a\u0000b',
    '\u00ff\u00fe',
    ' folded\r\n continued',
  );
  const header = fc.oneof(
    fc
      .tuple(
        fc.constantFrom('X-Request-Id', 'X-Custom', 'Anthropic-Version', 'Content-Type'),
        fc.oneof(injected, byteString),
      )
      .map(([name, value]) => `${name}: ${value}`),
    fc.tuple(byteString, byteString).map(([name, value]) => `${name}: ${value}`),
    fc.constantFrom(
      'Content-Length: 3',
      'Transfer-Encoding: chunked',
      'Transfer-Encoding: chunked, identity',
      'Transfer-Encoding: xchunked',
      'Content-Length: -1',
      'Content-Length: 99999999999999999999',
      'Host: a\r\nHost: b',
      ' X-Leading-Space: 1',
      'X-No-Colon',
      ': empty-name',
    ),
  );
  return fc.array(header, { minLength: 1, maxLength: 3 }).map((headers) => ({
    kind: headers.join(' | ').slice(0, 120),
    head: [
      `POST ${path} HTTP/1.1`,
      'Host: 127.0.0.1',
      'Connection: close',
      `Authorization: ${authorization}`,
      'Content-Type: application/json',
      `Content-Length: ${body.length}`,
      ...headers,
    ].join('\r\n'),
    body,
  }));
}
