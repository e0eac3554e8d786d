import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../canonical/errors.js';
import { tagSignature } from '../../canonical/reasoning-signature.js';
import {
  decodeGeminiCountTokensRequest,
  decodeGeminiGenerateRequest,
  type GeminiTarget,
} from './gemini-decode-request.js';
import { packReasoning } from './gemini-reasoning-carrier.js';

// The media of an Anthropic-, a Gemini-, an OpenAI- and a DeepSeek-served model (providers/media-input.ts).
const alpha: GeminiTarget = {
  model: 'alpha-sonnet-5',
  media: { imageUrls: true, inlinePdfs: true, pdfUrls: true, otherTypes: false },
};
const gamma: GeminiTarget = {
  model: 'gamma-2.5-pro',
  media: { imageUrls: true, inlinePdfs: true, pdfUrls: true, otherTypes: true },
};
const beta: GeminiTarget = {
  model: 'beta-5.4',
  media: { imageUrls: true, inlinePdfs: true, pdfUrls: false, otherTypes: false },
};
const delta: GeminiTarget = {
  model: 'delta-v4-flash',
  media: { imageUrls: false, inlinePdfs: false, pdfUrls: false, otherTypes: false },
};

function decode(body: unknown, target = alpha) {
  return decodeGeminiGenerateRequest(body, target, false).request;
}

function refusal(body: unknown, target = alpha): GatewayError {
  try {
    decode(body, target);
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('decoded without an error');
}

const tools = [
  {
    functionDeclarations: [
      {
        name: 'lookup',
        parameters: {
          type: 'OBJECT',
          properties: { word: { type: 'STRING', nullable: true } },
          required: ['word'],
          propertyOrdering: ['word'],
        },
      },
      { name: 'spell' },
    ],
  },
];

describe('decodeGeminiGenerateRequest', () => {
  it('maps system instruction, contents, generation config and thinking onto the canonical request', () => {
    const { request, includeThoughts } = decodeGeminiGenerateRequest(
      {
        systemInstruction: { parts: [{ text: 'Be brief.' }] },
        contents: [{ parts: [{ text: 'Hi' }] }],
        generationConfig: {
          temperature: 0.5,
          topP: 0.9,
          topK: 20,
          maxOutputTokens: 99,
          stopSequences: ['END'],
          seed: 7,
          thinkingConfig: { thinkingBudget: 2048, includeThoughts: true },
        },
      },
      alpha,
      true,
    );
    expect(request).toMatchObject({
      model: 'alpha-sonnet-5',
      system: [{ type: 'text', text: 'Be brief.' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
      sampling: { temperature: 0.5, topP: 0.9, topK: 20, stop: ['END'], seed: 7 },
      maxOutputTokens: 99,
      reasoning: { enabled: true, budgetTokens: 2048 },
      stream: true,
      extensionsProtocol: 'gemini-generate',
    });
    expect(includeThoughts).toBe(true);
  });

  it('thinking: budget 0 is off, a level is an effort, thoughts not asked for are omitted', () => {
    expect(
      decode({ contents: [{ parts: [{ text: 'x' }] }], generationConfig: { thinkingConfig: { thinkingBudget: 0 } } })
        .reasoning,
    ).toEqual({ enabled: false });
    expect(
      decode({
        contents: [{ parts: [{ text: 'x' }] }],
        generationConfig: { thinkingConfig: { thinkingLevel: 'HIGH', includeThoughts: true } },
      }).reasoning,
    ).toEqual({ enabled: true, effort: 'high' });
    expect(
      decode({ contents: [{ parts: [{ text: 'x' }] }], generationConfig: { thinkingConfig: { thinkingBudget: -1 } } })
        .reasoning,
    ).toEqual({ enabled: true, display: 'omitted' });
  });

  it('accepts snake_case field names, leaving function arguments and schemas as written', () => {
    const request = decode({
      system_instruction: { parts: [{ text: 'S' }] },
      contents: [
        { role: 'user', parts: [{ text: 'Q' }] },
        { role: 'model', parts: [{ function_call: { name: 'lookup', args: { snake_key: 1 } } }] },
        { role: 'user', parts: [{ function_response: { name: 'lookup', response: { output: 'A' } } }] },
      ],
      tools: [
        {
          function_declarations: [
            {
              name: 'lookup',
              parameters_json_schema: { type: 'object', properties: { snake_key: { type: 'integer' } } },
            },
          ],
        },
      ],
      generation_config: { max_output_tokens: 5 },
    });
    expect(request.system).toEqual([{ type: 'text', text: 'S' }]);
    expect(request.maxOutputTokens).toBe(5);
    expect(request.messages[1]!.content[0]).toMatchObject({ type: 'tool-call', argumentsJson: '{"snake_key":1}' });
    expect(request.tools![0]!.parameters).toEqual({ type: 'object', properties: { snake_key: { type: 'integer' } } });
  });

  it("converts Google's OpenAPI schema (upper-case types, nullable, propertyOrdering) to JSON Schema", () => {
    const request = decode({ contents: [{ parts: [{ text: 'x' }] }], tools });
    expect(request.tools).toEqual([
      {
        name: 'lookup',
        parameters: { type: 'object', properties: { word: { type: ['string', 'null'] } }, required: ['word'] },
      },
      { name: 'spell' },
    ]);
  });

  it('function calls and responses: paired by id, else by name in call order; ids minted where the client gave none', () => {
    const request = decode({
      contents: [
        { role: 'user', parts: [{ text: 'Look up two words.' }] },
        {
          role: 'model',
          parts: [
            { functionCall: { name: 'lookup', args: { word: 'a' } } },
            { functionCall: { id: 'call_b', name: 'lookup', args: { word: 'b' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'call_b', name: 'lookup', response: { output: 'B' } } },
            { functionResponse: { name: 'lookup', response: { error: 'no such word' } } },
          ],
        },
      ],
      tools,
    });
    const calls = request.messages[1]!.content;
    expect(calls.map((block) => (block.type === 'tool-call' ? block.id : ''))).toEqual(['gemini_call_1_0', 'call_b']);
    expect(request.messages[2]!.content).toEqual([
      { type: 'tool-result', toolCallId: 'call_b', content: [{ type: 'text', text: 'B' }], isError: false },
      {
        type: 'tool-result',
        toolCallId: 'gemini_call_1_0',
        content: [{ type: 'text', text: 'no such word' }],
        isError: true,
      },
    ]);
  });

  it('a streamed reply kept as several model contents is one turn: thought pieces join, the carrier wins over them', () => {
    const signature = tagSignature('anthropic', 'sig-abc');
    const carrier = packReasoning(
      [{ type: 'reasoning', text: 'I should look it up.', signature: 'sig-abc' }],
      'anthropic',
    );
    const request = decode({
      contents: [
        { role: 'user', parts: [{ text: 'What is a turnpike?' }] },
        { role: 'model', parts: [{ text: 'I should ', thought: true }] },
        { role: 'model', parts: [{ text: 'look it up.', thought: true }] },
        { role: 'model', parts: [{ text: '', thought: true, thoughtSignature: signature }] },
        {
          role: 'model',
          parts: [
            { functionCall: { id: 'toolu_1', name: 'lookup', args: { word: 'turnpike' } }, thoughtSignature: carrier },
          ],
        },
        {
          role: 'user',
          parts: [{ functionResponse: { id: 'toolu_1', name: 'lookup', response: { output: 'a toll road' } } }],
        },
      ],
      tools,
    });
    expect(request.messages).toHaveLength(3);
    expect(request.messages[1]!.content).toEqual([
      { type: 'reasoning', text: 'I should look it up.', signature: 'sig-abc', originVendor: 'anthropic' },
      { type: 'tool-call', id: 'toolu_1', name: 'lookup', argumentsJson: '{"word":"turnpike"}' },
    ]);
    // Without the carrier (a client that kept the thought parts but not the call's signature), the pieces join.
    const joined = decode({
      contents: [
        { role: 'user', parts: [{ text: 'Q' }] },
        { role: 'model', parts: [{ text: 'I should ', thought: true }] },
        {
          role: 'model',
          parts: [
            { text: 'look it up.', thought: true },
            { text: '', thought: true, thoughtSignature: signature },
            { text: 'Answer.' },
          ],
        },
      ],
    });
    expect(joined.messages[1]!.content).toEqual([
      { type: 'reasoning', text: 'I should look it up.', signature: 'sig-abc', originVendor: 'anthropic' },
      { type: 'text', text: 'Answer.' },
    ]);
  });

  it("Gemini CLI's synthetic signature on a call is not reasoning", () => {
    const request = decode({
      contents: [
        { role: 'user', parts: [{ text: 'Q' }] },
        {
          role: 'model',
          parts: [{ functionCall: { name: 'lookup', args: {} }, thoughtSignature: 'skip_thought_signature_validator' }],
        },
        { role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { output: 'A' } } }] },
      ],
    });
    expect(request.messages[1]!.content.map((block) => block.type)).toEqual(['tool-call']);
  });

  it('functionCallingConfig: ANY with one name forces it, with several keeps only those tools; NONE is none', () => {
    const base = { contents: [{ parts: [{ text: 'x' }] }], tools };
    expect(
      decode({ ...base, toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['spell'] } } })
        .toolChoice,
    ).toEqual({ type: 'tool', name: 'spell' });
    const several = decode({
      ...base,
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['spell', 'lookup'] } },
    });
    expect(several.toolChoice).toEqual({ type: 'required' });
    expect(several.tools!.map((tool) => tool.name)).toEqual(['lookup', 'spell']);
    expect(decode({ ...base, toolConfig: { functionCallingConfig: { mode: 'NONE' } } }).toolChoice).toEqual({
      type: 'none',
    });
    expect(
      refusal({ ...base, toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['nope'] } } })
        .param,
    ).toBe('toolConfig.functionCallingConfig.allowedFunctionNames');
  });

  it('response formats: JSON mode, a JSON Schema, an OpenAPI schema; a schema without JSON mode is refused', () => {
    const base = { contents: [{ parts: [{ text: 'x' }] }] };
    expect(decode({ ...base, generationConfig: { responseMimeType: 'application/json' } }).responseFormat).toEqual({
      type: 'json_object',
    });
    expect(
      decode({
        ...base,
        generationConfig: {
          responseMimeType: 'application/json',
          responseSchema: { type: 'OBJECT', properties: { a: { type: 'INTEGER' } } },
        },
      }).responseFormat,
    ).toEqual({
      type: 'json_schema',
      name: 'response',
      schema: { type: 'object', properties: { a: { type: 'integer' } } },
    });
    expect(refusal({ ...base, generationConfig: { responseJsonSchema: { type: 'object' } } }).param).toBe(
      'generationConfig.responseMimeType',
    );
    expect(refusal({ ...base, generationConfig: { responseMimeType: 'text/x.enum' } }).code).toBe(
      'unsupported_parameter',
    );
  });

  it('media: images anywhere (not for DeepSeek URLs), PDFs, inline PDFs for all but DeepSeek, audio only for Gemini; Google-hosted files refused', () => {
    const image = { contents: [{ parts: [{ inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } }] }] };
    expect(decode(image).messages[0]!.content[0]).toEqual({
      type: 'image',
      source: { kind: 'base64', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
    });
    const audio = { contents: [{ parts: [{ inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } }] }] };
    expect(decode(audio, gamma).messages[0]!.content[0]).toMatchObject({
      type: 'document',
      source: { mediaType: 'audio/wav' },
    });
    expect(refusal(audio).param).toBe('contents[0].parts[0].inlineData.mimeType');
    const pdf = { contents: [{ parts: [{ inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } }] }] };
    expect(decode(pdf).messages[0]!.content[0]).toMatchObject({ type: 'document' });
    expect(decode(pdf, beta).messages[0]!.content[0]).toMatchObject({
      type: 'document',
    });
    expect(refusal(pdf, delta).code).toBe('unsupported_parameter');
    const pdfUrl = {
      contents: [{ parts: [{ fileData: { mimeType: 'application/pdf', fileUri: 'https://example.com/a.pdf' } }] }],
    };
    expect(refusal(pdfUrl, beta).code).toBe('unsupported_parameter');
    const url = {
      contents: [{ parts: [{ fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/a.jpg' } }] }],
    };
    expect(decode(url).messages[0]!.content[0]).toEqual({
      type: 'image',
      source: { kind: 'url', url: 'https://example.com/a.jpg' },
    });
    expect(refusal(url, delta).code).toBe('unsupported_parameter');
    expect(
      refusal(
        { contents: [{ parts: [{ fileData: { mimeType: 'image/jpeg', fileUri: 'gs://bucket/a.jpg' } }] }] },
        gamma,
      ).param,
    ).toBe('contents[0].parts[0].fileData.fileUri');
  });

  it('bad contents: a call in a user content, a response in a model content, an unanswered call, an empty content list', () => {
    expect(refusal({ contents: [{ role: 'user', parts: [{ functionCall: { name: 'lookup' } }] }] }).param).toBe(
      'contents[0].parts[0]',
    );
    expect(
      refusal({ contents: [{ role: 'model', parts: [{ functionResponse: { name: 'lookup', response: {} } }] }] }).param,
    ).toBe('contents[0].parts[0]');
    expect(
      refusal({
        contents: [
          { role: 'user', parts: [{ text: 'Q' }] },
          { role: 'model', parts: [{ functionCall: { name: 'lookup' } }] },
          { role: 'model', parts: [{ text: 'more' }] },
          { role: 'user', parts: [{ text: 'no answer' }] },
          { role: 'model', parts: [{ text: 'then' }] },
        ],
      }).message,
    ).toContain("'lookup' got no functionResponse");
    expect(refusal({ contents: [] }).param).toBe('contents');
    expect(refusal({ contents: [{ role: 'system', parts: [{ text: 'x' }] }] }).param).toBe('contents[0].role');
    expect(refusal({ contents: [{ parts: [{ text: 'x' }] }], cachedContent: 'cachedContents/abc' }).param).toBe(
      'cachedContent',
    );
  });
});

describe('decodeGeminiCountTokensRequest', () => {
  it('takes contents, or a whole generateContentRequest', () => {
    expect(decodeGeminiCountTokensRequest({ contents: [{ parts: [{ text: 'x' }] }] }, alpha).messages).toHaveLength(1);
    const whole = decodeGeminiCountTokensRequest(
      {
        generateContentRequest: {
          model: 'models/x',
          contents: [{ parts: [{ text: 'x' }] }],
          systemInstruction: { parts: [{ text: 'S' }] },
        },
      },
      alpha,
    );
    expect(whole.system).toEqual([{ type: 'text', text: 'S' }]);
    expect(() => decodeGeminiCountTokensRequest({}, alpha)).toThrow(GatewayError);
  });
});

describe('decodeGeminiGenerateRequest: choices, log probabilities and VALIDATED', () => {
  const hello = { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] };

  it('candidateCount and responseLogprobs become the request, named by their Gemini fields', () => {
    const request = decode({ ...hello, generationConfig: { candidateCount: 3, responseLogprobs: true, logprobs: 4 } });
    expect(request.choices).toEqual({ count: 3, param: 'generationConfig.candidateCount' });
    expect(request.logprobs).toEqual({ topCandidates: 4, param: 'generationConfig.responseLogprobs' });
    expect(request.extensions).toEqual({});
  });

  it('refuses candidateCount above 8, logprobs above 20, and logprobs without responseLogprobs', () => {
    expect(refusal({ ...hello, generationConfig: { candidateCount: 9 } }).param).toBe(
      'generationConfig.candidateCount',
    );
    expect(refusal({ ...hello, generationConfig: { responseLogprobs: true, logprobs: 21 } }).param).toBe(
      'generationConfig.logprobs',
    );
    expect(refusal({ ...hello, generationConfig: { logprobs: 2 } }).param).toBe('generationConfig.logprobs');
  });

  it('VALIDATED is kept, its allowed names keeping only those tools', () => {
    const request = decode({
      ...hello,
      tools,
      toolConfig: {
        functionCallingConfig: { mode: 'VALIDATED', allowedFunctionNames: [tools[0]!.functionDeclarations[0]!.name] },
      },
    });
    expect(request.toolChoice).toEqual({ type: 'auto', validated: true });
    expect(request.tools).toHaveLength(1);
  });
});
