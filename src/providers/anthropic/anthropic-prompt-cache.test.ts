import { describe, expect, it } from 'vitest';
import { estimateRequestInputTokens } from '../../canonical/count-tokens.js';
import type { CanonicalRequest } from '../../canonical/request.js';
import { ModelCatalog } from '../../catalog/model-catalog.js';
import { canonicalRequest, TEST_MODEL, userText } from '../../../test/helpers/anthropic-test-fixtures.js';
import type { AnthropicTextBlock } from '../../wire/anthropic-messages-wire.js';
import { buildAnthropicCountTokensRequest, buildAnthropicRequest } from './anthropic-build-request.js';
import { promptReaches } from './anthropic-prompt-cache.js';

const FIVE = { type: 'ephemeral' };
const HOUR = { type: 'ephemeral', ttl: '1h' };
/** About 1,500 tokens: above alpha-sonnet-5's minimum of 1,024, below alpha-haiku-4-5's 4,096. */
const LONG = 'The river runs past the old mill and under the stone bridge. '.repeat(110);

const TOOL = { name: 'now', parameters: { type: 'object' } };
const systemBlocks = (system: string | AnthropicTextBlock[] | undefined) => (Array.isArray(system) ? system : []);

function longRequest(overrides: Partial<CanonicalRequest> = {}): CanonicalRequest {
  return canonicalRequest({
    system: [
      { type: 'text', text: 'You are terse.' },
      { type: 'text', text: LONG },
    ],
    tools: [TOOL],
    messages: [
      userText('First question.'),
      { role: 'assistant', content: [{ type: 'text', text: 'First answer.' }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Second' },
          { type: 'text', text: 'question.' },
        ],
      },
    ],
    extensionsProtocol: 'openai-responses',
    ...overrides,
  });
}

describe('buildAnthropicRequest: breakpoints forwarded', () => {
  it('puts each breakpoint on the block or tool that carries it, and the top-level one at the top level', () => {
    const { body, droppedParameters } = buildAnthropicRequest(
      canonicalRequest({
        extensionsProtocol: 'anthropic-messages',
        system: [{ type: 'text', text: 'Rules.', cache: { ttl: '1h' } }],
        tools: [{ ...TOOL, cache: { ttl: '1h' } }],
        cache: { ttl: '5m' },
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { kind: 'url', url: 'https://x/y.png' }, cache: { ttl: '5m' } },
              { type: 'document', source: { kind: 'url', url: 'https://x/y.pdf' }, cache: { ttl: '5m' } },
            ],
          },
          {
            role: 'assistant',
            content: [{ type: 'tool-call', id: 't1', name: 'now', argumentsJson: '{}', cache: { ttl: '5m' } }],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool-result',
                toolCallId: 't1',
                content: [{ type: 'text', text: 'noon', cache: { ttl: '5m' } }],
                isError: false,
                cache: { ttl: '5m' },
              },
            ],
          },
        ],
      }),
      TEST_MODEL,
    );
    expect(droppedParameters).toEqual([]);
    expect(body.system).toEqual([{ type: 'text', text: 'Rules.', cache_control: HOUR }]);
    expect(body.tools?.[0]?.cache_control).toEqual(HOUR);
    expect(body.cache_control).toEqual(FIVE);
    expect(body.messages[0]!.content).toEqual([
      { type: 'image', source: { type: 'url', url: 'https://x/y.png' }, cache_control: FIVE },
      { type: 'document', source: { type: 'url', url: 'https://x/y.pdf' }, cache_control: FIVE },
    ]);
    expect(body.messages[1]!.content).toEqual([
      { type: 'tool_use', id: 't1', name: 'now', input: {}, cache_control: FIVE },
    ]);
    expect(body.messages[2]!.content).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 't1',
        content: [{ type: 'text', text: 'noon', cache_control: FIVE }],
        cache_control: FIVE,
      },
    ]);
  });

  it('sends back the other members an Anthropic client gave a cache_control', () => {
    const { body } = buildAnthropicRequest(
      canonicalRequest({
        extensionsProtocol: 'anthropic-messages',
        system: [{ type: 'text', text: 'Rules.', cache: { ttl: '1h', anthropicFields: { scope: 'global' } } }],
        cache: { ttl: '5m', anthropicFields: { evict_on_complete: true } },
      }),
      TEST_MODEL,
    );
    expect(body.system).toEqual([{ type: 'text', text: 'Rules.', cache_control: { ...HOUR, scope: 'global' } }]);
    expect(body.cache_control).toEqual({ ...FIVE, evict_on_complete: true });
  });

  it('keeps the top-level breakpoint in the count_tokens body, and places none of its own there', () => {
    const counted = buildAnthropicCountTokensRequest(longRequest({ cache: { ttl: '5m' } }), TEST_MODEL).body;
    expect(counted.cache_control).toEqual(FIVE);
    const plain = JSON.stringify(buildAnthropicCountTokensRequest(longRequest(), TEST_MODEL).body);
    expect(plain).not.toContain('cache_control');
  });
});

describe('buildAnthropicRequest: breakpoints the gateway places', () => {
  it('places 5-minute breakpoints on the last system block and the last block of the last user turn', () => {
    expect(estimateRequestInputTokens(longRequest())).toBeGreaterThan(TEST_MODEL.minCacheablePromptTokens!);
    for (const protocol of ['openai-responses', 'gemini-generate', 'openai-chat'] as const) {
      const { body } = buildAnthropicRequest(longRequest({ extensionsProtocol: protocol }), TEST_MODEL);
      expect(systemBlocks(body.system).map((block) => block.cache_control)).toEqual([undefined, FIVE]);
      expect(body.tools?.[0]?.cache_control).toBeUndefined();
      expect(body.messages[2]!.content).toEqual([
        { type: 'text', text: 'Second' },
        { type: 'text', text: 'question.', cache_control: FIVE },
      ]);
      expect(JSON.stringify(body.messages.slice(0, 2))).not.toContain('cache_control');
      expect(body.cache_control).toBeUndefined();
    }
  });

  it('places the prefix breakpoint on the last tool when there is no system prompt', () => {
    const { body } = buildAnthropicRequest(
      longRequest({
        system: [],
        tools: [TOOL, { name: 'later', description: LONG }],
      }),
      TEST_MODEL,
    );
    expect(body.tools?.map((tool) => tool.cache_control)).toEqual([undefined, FIVE]);
    expect(body.messages[2]!.content.at(-1)).toMatchObject({ cache_control: FIVE });
  });

  it('places none for a short prompt, below the model minimum, when switched off, or for an Anthropic client', () => {
    const none = (request: CanonicalRequest, model = TEST_MODEL) =>
      expect(JSON.stringify(buildAnthropicRequest(request, model).body)).not.toContain('cache_control');
    none(canonicalRequest({ extensionsProtocol: 'openai-responses' }));
    none(longRequest(), new ModelCatalog().resolve('alpha-haiku-4-5'));
    none(longRequest(), new ModelCatalog({ 'alpha-sonnet-5': { automaticCaching: false } }).resolve('alpha-sonnet-5'));
    none(longRequest({ extensionsProtocol: 'anthropic-messages' }));
  });

  it("adds nothing to a client's own breakpoints", () => {
    const { body } = buildAnthropicRequest(
      longRequest({
        extensionsProtocol: 'openai-chat',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi', cache: { ttl: '1h' } }] }],
      }),
      TEST_MODEL,
    );
    expect(systemBlocks(body.system).some((block) => block.cache_control !== undefined)).toBe(false);
    expect(body.messages[0]!.content).toEqual([{ type: 'text', text: 'Hi', cache_control: HOUR }]);
  });
});

describe('promptReaches: the length check, stopped as soon as it is settled', () => {
  it('agrees with the request estimate on either side of a minimum', () => {
    const request = longRequest();
    const estimate = estimateRequestInputTokens(request);
    // The estimate adds a few framing tokens per message that the check leaves out.
    expect(promptReaches(request, estimate - 40)).toBe(true);
    expect(promptReaches(request, estimate + 1)).toBe(false);
    expect(promptReaches(request, 1_024)).toBe(true);
    expect(promptReaches(request, 4_096)).toBe(false);
  });

  it('counts an image at its flat estimate', () => {
    const image = canonicalRequest({
      messages: [{ role: 'user', content: [{ type: 'image', source: { kind: 'url', url: 'https://x/y.png' } }] }],
    });
    expect(promptReaches(image, 1_024)).toBe(true);
    expect(promptReaches(image, 4_096)).toBe(false);
  });
});
