import { describe, expect, it } from 'vitest';
import { countTokens } from './reply-engine.js';
import { argumentsFromSchema, promptWords } from './schema-arguments.js';
import {
  canonicalJson,
  isGeminiSignatureValid,
  isThinkingSignatureValid,
  signGeminiPart,
  signThinking,
} from './signatures.js';
import { planTurn, type TurnInput } from './turn-planner.js';

const WEATHER = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

function input(extra: Partial<TurnInput> = {}): TurnInput {
  return {
    seedText: 'conversation',
    lastUserText: 'What is the weather in Lisbon?',
    directives: {},
    reasoning: false,
    tools: [
      { name: 'get_weather', parameters: WEATHER },
      { name: 'get_time', parameters: undefined },
    ],
    toolChoice: { kind: 'auto' },
    parallelCalls: true,
    ...extra,
  };
}

describe('schema arguments', () => {
  it('takes strings from the prompt, last significant word first, directives left out', () => {
    expect(promptWords('What is the weather in Lisbon? [[sim tool=x]]')).toEqual(['weather', 'Lisbon']);
    const schema = {
      type: 'object',
      properties: { to: { type: 'string' }, from: { type: 'string' }, via: { type: 'string' } },
    };
    expect(argumentsFromSchema(schema, 'Trains from Porto to Lisbon')).toEqual({
      to: 'Lisbon',
      from: 'Porto',
      via: 'Trains',
    });
    expect(argumentsFromSchema(schema, '')).toEqual({ to: 'example', from: 'example', via: 'example' });
  });

  it('fills every type: numbers within bounds, booleans, enums, const, arrays, nested objects, formats', () => {
    const schema = {
      type: 'object',
      properties: {
        count: { type: 'integer', minimum: 5, maximum: 9 },
        ratio: { type: 'number', maximum: 0.5 },
        flag: { type: 'boolean' },
        unit: { type: 'string', enum: ['celsius', 'kelvin'] },
        kind: { const: 'fixed' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 2 },
        when: { type: 'string', format: 'date-time' },
        mail: { type: 'string', format: 'email' },
        nested: { type: 'object', properties: { deep: { type: ['null', 'integer'] } } },
        choice: { anyOf: [{ type: 'null' }, { type: 'boolean' }] },
        code: { type: 'string', minLength: 8, maxLength: 10 },
      },
    };
    expect(argumentsFromSchema(schema, 'ship it')).toEqual({
      count: 5,
      ratio: 0.5,
      flag: true,
      unit: 'celsius',
      kind: 'fixed',
      tags: ['ship', 'ship'],
      when: '2026-01-15T09:30:00Z',
      mail: 'ship@example.com',
      nested: { deep: 3 },
      choice: true,
      code: 'shipxxxx',
    });
  });

  it("reads Gemini's OpenAPI subset and resolves local $refs", () => {
    expect(
      argumentsFromSchema(
        { type: 'OBJECT', properties: { n: { type: 'INTEGER' }, s: { type: 'STRING', nullable: true } } },
        'go north',
      ),
    ).toEqual({ n: 1, s: 'north' });
    const withRef = {
      type: 'object',
      properties: { place: { $ref: '#/$defs/place' } },
      $defs: { place: { type: 'object', properties: { name: { type: 'string' } } } },
    };
    expect(argumentsFromSchema(withRef, 'Visit Paris')).toEqual({ place: { name: 'Paris' } });
    expect(argumentsFromSchema(undefined, 'x')).toEqual({});
  });
});

describe('turn planner', () => {
  it('calls the directive tools only while the last turn is a user turn', () => {
    const planned = planTurn(input({ directives: { toolNames: ['get_weather', 'get_time'] } }));
    if (!planned.ok) throw new Error(planned.problem);
    expect(planned.plan.calls.map((call) => [call.name, call.argumentsJson])).toEqual([
      ['get_weather', '{"city":"Lisbon"}'],
      ['get_time', '{}'],
    ]);
    expect(planned.plan.end).toBe('tool-calls');
    expect(planned.plan.outputTokens).toBe(
      countTokens('get_weather{"city":"Lisbon"}') + countTokens('get_time') + countTokens('{}'),
    );
    const afterResults = planTurn(input({ directives: { toolNames: ['get_weather'] }, toolResults: ['rain'] }));
    expect(
      afterResults.ok && [
        afterResults.plan.calls.length,
        afterResults.plan.text.text.startsWith('Tool results: "rain".'),
      ],
    ).toEqual([0, true]);
  });

  it('calls with the exact arguments of the directive (args=) instead of generated ones', () => {
    const planned = planTurn(
      input({ directives: { toolNames: ['get_weather'], toolArguments: { city: 'Porto', days: [1, 2] } } }),
    );
    if (!planned.ok) throw new Error(planned.problem);
    expect(planned.plan.calls.map((call) => [call.name, call.argumentsJson])).toEqual([
      ['get_weather', '{"city":"Porto","days":[1,2]}'],
    ]);
  });

  it('lets the tool choice force, narrow or forbid calls', () => {
    const pick = (extra: Partial<TurnInput>): string[] => {
      const planned = planTurn(input(extra));
      return planned.ok ? planned.plan.calls.map((call) => call.name) : [planned.problem];
    };
    expect(pick({ toolChoice: { kind: 'any' } })).toEqual(['get_weather']);
    expect(pick({ toolChoice: { kind: 'any', allowed: ['get_time'] } })).toEqual(['get_time']);
    expect(
      pick({ toolChoice: { kind: 'named', name: 'get_time' }, directives: { toolNames: ['get_weather'] } }),
    ).toEqual(['get_time']);
    expect(pick({ toolChoice: { kind: 'none' }, directives: { toolNames: ['get_weather'] } })).toEqual([]);
    expect(pick({ parallelCalls: false, directives: { toolNames: ['get_time', 'get_weather'] } })).toEqual([
      'get_time',
    ]);
    expect(pick({ directives: { toolNames: ['get_stock'] } })).toEqual([
      expect.stringContaining("tool 'get_stock' is not among the request's tools"),
    ]);
  });

  it('spends one output budget on reasoning, then text, then calls', () => {
    const full = planTurn(input({ reasoning: true, directives: { toolNames: ['get_weather'], toolText: true } }));
    if (!full.ok) throw new Error(full.problem);
    const reasoningTokens = full.plan.reasoningTokens;
    expect(reasoningTokens).toBe(countTokens(full.plan.reasoning?.text ?? ''));
    expect(full.plan.outputTokens).toBe(
      reasoningTokens + full.plan.text.completionTokens + countTokens('get_weather{"city":"Lisbon"}'),
    );
    const noRoomForCall = planTurn(
      input({
        reasoning: true,
        directives: { toolNames: ['get_weather'], toolText: true },
        maxTokens: reasoningTokens + full.plan.text.completionTokens + 1,
      }),
    );
    expect(
      noRoomForCall.ok && [noRoomForCall.plan.end, noRoomForCall.plan.calls.length, noRoomForCall.plan.outputTokens],
    ).toEqual(['length', 0, reasoningTokens + full.plan.text.completionTokens + 1]);
    const cutInReasoning = planTurn(input({ reasoning: true, maxTokens: 3 }));
    expect(
      cutInReasoning.ok && [cutInReasoning.plan.end, cutInReasoning.plan.text.text, cutInReasoning.plan.outputTokens],
    ).toEqual(['length', '', 3]);
  });
});

describe('signatures', () => {
  it('verifies Anthropic thinking signatures against the exact text', () => {
    const signature = signThinking('I think.');
    expect(isThinkingSignatureValid('I think.', signature)).toBe(true);
    expect(isThinkingSignatureValid('I think!', signature)).toBe(false);
    expect(isThinkingSignatureValid('I think.', 'forged')).toBe(false);
  });

  it('binds Gemini call signatures to the call, whatever its key order', () => {
    const call = { name: 'f', args: { a: 1, b: [1, { c: 2, d: 3 }] } };
    const signature = signGeminiPart('seed', call);
    expect(isGeminiSignatureValid(signature, { name: 'f', args: { b: [1, { d: 3, c: 2 }], a: 1 } })).toBe(true);
    expect(isGeminiSignatureValid(signature, { name: 'f', args: { a: 2 } })).toBe(false);
    expect(isGeminiSignatureValid(signature)).toBe(false);
    expect(isGeminiSignatureValid(signGeminiPart('seed'))).toBe(true);
    expect(isGeminiSignatureValid('AAAA')).toBe(false);
    expect(canonicalJson({ b: 1, a: [true, null] })).toBe('{"a":[true,null],"b":1}');
  });
});

describe('structured output', () => {
  it('answers an instance of the schema, or an object in plain JSON mode, within the token cap', () => {
    const noTools = { tools: [], toolChoice: { kind: 'auto' } as const };
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const shaped = planTurn(input({ ...noTools, jsonOutput: { schema } }));
    expect(shaped.ok && JSON.parse(shaped.plan.text.text)).toEqual({ city: 'Lisbon' });
    const plain = planTurn(input({ ...noTools, jsonOutput: {} }));
    expect(plain.ok && JSON.parse(plain.plan.text.text)).toEqual({
      text: expect.stringMatching(/^You said: "What is the weather in Lisbon\?"/),
    });
    const capped = planTurn(input({ ...noTools, jsonOutput: {}, maxTokens: 3 }));
    expect(capped.ok && capped.plan).toMatchObject({ end: 'length', outputTokens: 3 });
    // Tool calls still win when the model calls a tool.
    const calling = planTurn(input({ jsonOutput: { schema }, directives: { toolNames: ['get_weather'] } }));
    expect(calling.ok && calling.plan.calls.map((call) => call.name)).toEqual(['get_weather']);
  });
});
