import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import { decodeResponsesRequest, parseResponsesRequest } from './responses-decode-request.js';
import { encodeReasoningBlob } from './responses-reasoning-blob.js';

function decode(body: Record<string, unknown>, history: Array<Record<string, unknown>> = []) {
  return decodeResponsesRequest(parseResponsesRequest({ model: 'beta-5.4', ...body }), history);
}

function decodeError(body: Record<string, unknown>): GatewayError {
  try {
    decode(body);
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected the body to be rejected');
}

describe('decodeResponsesRequest', () => {
  it('a string input is one user message; instructions and leading developer messages are the system prompt', () => {
    const { request, options, inputItems } = decode({
      input: 'hi',
      instructions: 'be brief',
      max_output_tokens: 50,
      temperature: 0.3,
      top_p: 0.9,
      user: 'u1',
    });
    expect(request.system).toEqual([{ type: 'text', text: 'be brief' }]);
    expect(request.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    expect(request.maxOutputTokens).toBe(50);
    expect(request.sampling).toEqual({ temperature: 0.3, topP: 0.9 });
    expect(request.user).toBe('u1');
    expect(request.extensionsProtocol).toBe('openai-responses');
    expect(options.store).toBe(true);
    expect(inputItems).toEqual([
      {
        type: 'message',
        id: expect.stringMatching(/^msg_/),
        role: 'user',
        content: [{ type: 'input_text', text: 'hi' }],
      },
    ]);

    const items = decode({
      input: [
        { role: 'developer', content: 'rules' },
        { role: 'user', content: [{ type: 'input_text', text: 'q' }] },
        { type: 'message', role: 'system', content: [{ type: 'input_text', text: 'now French' }] },
      ],
    });
    expect(items.request.system).toEqual([{ type: 'text', text: 'rules' }]);
    expect(items.request.messages.map((message) => message.role)).toEqual(['user', 'system']);
  });

  it('one assistant turn (reasoning, text, calls) is one assistant message; outputs one user message of results', () => {
    const blob = encodeReasoningBlob('anthropic', { type: 'reasoning', text: 'let me think', signature: 'sig-abc' });
    const { request } = decode({
      input: [
        { role: 'user', content: 'weather?' },
        { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: blob },
        {
          type: 'message',
          role: 'assistant',
          id: 'msg_1',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Checking.', annotations: [] }],
        },
        { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'get_weather', arguments: '{"city":"Lisbon"}' },
        { type: 'function_call', id: 'fc_2', call_id: 'call_b', name: 'get_weather', arguments: '{"city":"Porto"}' },
        { type: 'function_call_output', call_id: 'call_a', output: '21' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: '19' }] },
      ],
    });
    expect(request.messages).toHaveLength(3);
    expect(request.messages[1]).toEqual({
      role: 'assistant',
      content: [
        // The reasoning text and its signature, back to the vendor that made them.
        { type: 'reasoning', text: 'let me think', signature: 'sig-abc', originVendor: 'anthropic' },
        { type: 'text', text: 'Checking.' },
        { type: 'tool-call', id: 'call_a', name: 'get_weather', argumentsJson: '{"city":"Lisbon"}' },
        { type: 'tool-call', id: 'call_b', name: 'get_weather', argumentsJson: '{"city":"Porto"}' },
      ],
    });
    expect(request.messages[2]).toEqual({
      role: 'user',
      content: [
        { type: 'tool-result', toolCallId: 'call_a', content: [{ type: 'text', text: '21' }], isError: false },
        { type: 'tool-result', toolCallId: 'call_b', content: [{ type: 'text', text: '19' }], isError: false },
      ],
    });
  });

  it("another vendor's reasoning keeps its origin tag; a replay without a blob keeps the summary text unsigned", () => {
    const blob = encodeReasoningBlob('gemini', { type: 'reasoning', text: 'thought', signature: 'g-sig' });
    const { request } = decode({
      input: [
        { role: 'user', content: 'x' },
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'ignored when a blob is there' }],
          encrypted_content: blob,
        },
        { role: 'user', content: 'y' },
        {
          type: 'reasoning',
          id: 'rs_2',
          summary: [{ type: 'summary_text', text: 'a summary' }],
          encrypted_content: null,
        },
      ],
    });
    expect(request.messages[1]!.content[0]).toEqual({
      type: 'reasoning',
      text: 'thought',
      signature: 'g-sig',
      originVendor: 'gemini',
    });
    expect(request.messages[3]!.content[0]).toEqual({ type: 'reasoning', text: 'a summary' });
  });

  it('images and files inline; the previous conversation goes first', () => {
    const { request } = decode(
      {
        input: [
          {
            role: 'user',
            content: [
              { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' },
              { type: 'input_file', filename: 'a.pdf', file_data: 'JVBERi0=' },
            ],
          },
        ],
      },
      [
        { type: 'message', id: 'msg_0', role: 'user', content: 'earlier' },
        {
          type: 'message',
          id: 'msg_1',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'answer' }],
        },
      ],
    );
    expect(request.messages.map((message) => message.role)).toEqual(['user', 'assistant', 'user']);
    expect(request.messages[2]!.content).toEqual([
      { type: 'image', source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' }, detail: 'low' },
      { type: 'document', source: { kind: 'base64', mediaType: 'application/pdf', data: 'JVBERi0=' }, title: 'a.pdf' },
    ]);
  });

  it('function tools decode; web search is a server tool; other types are dropped and reported; allowed_tools narrows', () => {
    const fn = (name: string) => ({
      type: 'function',
      name,
      parameters: { type: 'object', properties: {} },
      strict: false,
    });
    const { request, droppedParameters } = decode({
      input: 'hi',
      tools: [fn('a'), fn('b'), { type: 'web_search' }, { type: 'local_shell' }],
      tool_choice: { type: 'allowed_tools', mode: 'required', tools: [{ type: 'function', name: 'b' }] },
      prompt_cache_key: 'k',
      client_metadata: { a: '1' },
      include: ['reasoning.encrypted_content', 'web_search_call.results'],
      text: { verbosity: 'low' },
    });
    expect(request.tools).toEqual([{ name: 'b', parameters: { type: 'object', properties: {} }, strict: false }]);
    expect(request.toolChoice).toEqual({ type: 'required' });
    // Run where the family has a web search, else dropped and reported by this name (the pipeline decides).
    expect(request.serverTools).toEqual([
      { kind: 'web-search', label: 'web_search', param: 'tools[2]', webSearch: {}, droppedAs: 'tools.web_search' },
    ]);
    expect(droppedParameters).not.toContain('tools.web_search');
    expect(droppedParameters).toEqual(
      expect.arrayContaining([
        'tools.local_shell',
        'client_metadata',
        'include.web_search_call.results',
        'text.verbosity',
      ]),
    );
    expect(droppedParameters).not.toContain('include.reasoning.encrypted_content');
  });

  it('a custom tool is a one-string-argument function; its calls and outputs round-trip', () => {
    const { request, options, droppedParameters } = decode({
      input: [
        { role: 'user', content: 'patch it' },
        { type: 'custom_tool_call', call_id: 'call_p', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
        { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done!' },
      ],
      tools: [
        {
          type: 'custom',
          name: 'apply_patch',
          description: 'Edit files',
          format: { type: 'grammar', syntax: 'lark', definition: 'start: "x"' },
        },
      ],
      tool_choice: { type: 'custom', name: 'apply_patch' },
    });
    expect(droppedParameters).toEqual([]);
    expect(options.customTools).toEqual(new Set(['apply_patch']));
    expect(request.tools).toEqual([
      {
        name: 'apply_patch',
        description: 'Edit files\n\nThe input must follow this lark grammar:\nstart: "x"',
        parameters: {
          type: 'object',
          properties: { input: { type: 'string', description: expect.any(String) } },
          required: ['input'],
          additionalProperties: false,
        },
      },
    ]);
    expect(request.toolChoice).toEqual({ type: 'tool', name: 'apply_patch' });
    expect(request.messages[1]!.content).toEqual([
      {
        type: 'tool-call',
        id: 'call_p',
        name: 'apply_patch',
        argumentsJson: '{"input":"*** Begin Patch\\n*** End Patch"}',
      },
    ]);
    expect(request.messages[2]!.content).toEqual([
      { type: 'tool-result', toolCallId: 'call_p', content: [{ type: 'text', text: 'Done!' }], isError: false },
    ]);
  });

  it('a namespace is flattened: each inner tool as <namespace>__<name> with both descriptions; history calls by namespace and name', () => {
    const { request, options, droppedParameters } = decode({
      input: [
        { role: 'user', content: 'delegate' },
        { type: 'function_call', call_id: 'call_s', namespace: 'agents', name: 'spawn', arguments: '{"task":"x"}' },
        { type: 'function_call_output', call_id: 'call_s', output: 'spawned' },
      ],
      tools: [
        {
          type: 'namespace',
          name: 'agents',
          description: 'Sub-agents.',
          tools: [
            {
              type: 'function',
              name: 'spawn',
              description: 'Start one.',
              parameters: { type: 'object', properties: { task: { type: 'string' } } },
            },
            { type: 'custom', name: 'note', description: 'Free text.' },
          ],
        },
        { type: 'function', name: 'spawn', parameters: { type: 'object', properties: {} } },
      ],
      tool_choice: { type: 'function', namespace: 'agents', name: 'spawn' },
    });
    expect(droppedParameters).toEqual([]);
    expect(request.tools!.map((tool) => [tool.name, tool.description])).toEqual([
      ['agents__spawn', 'Sub-agents.\n\nStart one.'],
      ['agents__note', 'Sub-agents.\n\nFree text.'],
      ['spawn', undefined],
    ]);
    expect(options.customTools).toEqual(new Set(['agents__note']));
    expect(options.namespacedTools.get('agents__spawn')).toEqual({ namespace: 'agents', name: 'spawn' });
    expect(request.toolChoice).toEqual({ type: 'tool', name: 'agents__spawn' });
    expect(request.messages[1]!.content).toEqual([
      { type: 'tool-call', id: 'call_s', name: 'agents__spawn', argumentsJson: '{"task":"x"}' },
    ]);
  });

  it('refuses a namespace holding another tool type, and two tools of one name', () => {
    const nested = decodeError({
      input: 'hi',
      tools: [{ type: 'namespace', name: 'ns', description: 'd', tools: [{ type: 'web_search' }] }],
    });
    expect(nested.param).toBe('tools[0].tools[0].type');
    const fn = { type: 'function', name: 'ns__a', parameters: { type: 'object' } };
    const twice = decodeError({
      input: 'hi',
      tools: [fn, { type: 'namespace', name: 'ns', description: 'd', tools: [{ ...fn, name: 'a' }] }],
    });
    expect(twice.param).toBe('tools[1].tools[0].name');
  });

  it('reports an unknown field by a name a header can carry', () => {
    const { droppedParameters } = decode({ input: 'hi', 'bad\r\nname': 1, ['k'.repeat(500)]: 2 });
    expect(droppedParameters).toEqual(['bad%0D%0Aname', `${'k'.repeat(100)}...`]);
  });

  it('json schema output, reasoning effort and summary', () => {
    const { request, options } = decode({
      input: 'hi',
      text: { format: { type: 'json_schema', name: 'answer', schema: { type: 'object' }, strict: true } },
      reasoning: { effort: 'high', summary: 'auto' },
      include: ['reasoning.encrypted_content'],
      store: false,
    });
    expect(request.responseFormat).toEqual({
      type: 'json_schema',
      name: 'answer',
      schema: { type: 'object' },
      strict: true,
    });
    expect(request.reasoning).toEqual({ effort: 'high' });
    expect(options).toMatchObject({ store: false, includeEncryptedReasoning: true, showReasoningSummary: true });
  });

  it.each([
    ['no input', {}, 'input'],
    ['an unknown item type', { input: [{ type: 'local_shell_call', call_id: 'c', action: {} }] }, 'input[0].type'],
    ['an item that is not an object', { input: ['hello'] }, 'input[0]'],
    ['an unknown role', { input: [{ role: 'wizard', content: 'x' }] }, 'input[0].role'],
    [
      'an output for no call',
      { input: [{ type: 'function_call_output', call_id: 'nope', output: 'x' }] },
      'input[0].call_id',
    ],
    ['a call without arguments', { input: [{ type: 'function_call', call_id: 'c', name: 'f' }] }, 'input[0].arguments'],
    [
      'a bad image URL',
      { input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'ftp://x' }] }] },
      'input[0].content[0].image_url',
    ],
    [
      'an uploaded file id',
      { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] },
      'input[0].content[0].file_id',
    ],
    [
      'a forged reasoning blob',
      {
        input: [
          { role: 'user', content: 'x' },
          { type: 'reasoning', summary: [], encrypted_content: 'tgr1.!!!' },
        ],
      },
      'input[1].encrypted_content',
    ],
    ['a bad function tool name', { input: 'x', tools: [{ type: 'function', name: 'has space' }] }, 'tools[0].name'],
    [
      'a forced hosted tool',
      { input: 'x', tools: [{ type: 'web_search' }], tool_choice: { type: 'web_search' } },
      'tool_choice',
    ],
    [
      'a custom tool output for no call',
      { input: [{ type: 'custom_tool_call_output', call_id: 'nope', output: 'x' }] },
      'input[0].call_id',
    ],
    [
      'seventeen metadata pairs',
      { input: 'x', metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
      'metadata',
    ],
    ['conversation', { input: 'x', conversation: 'conv_1' }, 'conversation'],
    ['a zero max_output_tokens', { input: 'x', max_output_tokens: 0 }, 'max_output_tokens'],
  ])('refuses %s with a 400 naming the field', (_name, body, param) => {
    const error = decodeError(body);
    expect(error.status).toBe(400);
    expect(error.entry.openaiType).toBe('invalid_request_error');
    expect(error.param).toBe(param);
  });

  it('decodes prompt_cache_key and prompt_cache_retention into the request and echoes them', () => {
    const { request, options, droppedParameters } = decode({
      input: 'hi',
      prompt_cache_key: 'codex-session-7',
      prompt_cache_retention: '24h',
    });
    expect(request).toMatchObject({ promptCacheKey: 'codex-session-7', promptCacheRetention: '24h' });
    expect(options.echo).toMatchObject({ prompt_cache_key: 'codex-session-7', prompt_cache_retention: '24h' });
    expect(droppedParameters).not.toContain('prompt_cache_key');
    expect(droppedParameters).not.toContain('prompt_cache_retention');
  });

  it.each([
    [{ prompt_cache_key: 'k'.repeat(65) }, 'prompt_cache_key'],
    [{ prompt_cache_retention: 'forever' }, 'prompt_cache_retention'],
  ])('refuses a bad prompt-cache field with a 400 naming it: %j', (fields, param) => {
    const error = decodeError({ input: 'hi', ...fields });
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
  });
});

describe('decodeResponsesRequest: safety_identifier and log probabilities', () => {
  it('keeps safety_identifier beside user', () => {
    const { request } = decode({ input: 'x', user: 'u-1', safety_identifier: 'hash-1' });
    expect(request.user).toBe('u-1');
    expect(request.safetyIdentifier).toBe('hash-1');
  });

  it('asks for log probabilities with the include value or top_logprobs, naming the field that asked', () => {
    const included = decode({ input: 'x', include: ['message.output_text.logprobs'], top_logprobs: 2 });
    expect(included.request.logprobs).toEqual({ topCandidates: 2, param: 'include[0]' });
    expect(included.droppedParameters).toEqual([]);
    expect(decode({ input: 'x', top_logprobs: 3 }).request.logprobs).toEqual({
      topCandidates: 3,
      param: 'top_logprobs',
    });
    expect(decode({ input: 'x', top_logprobs: 0 }).request.logprobs).toBeUndefined();
  });
});
