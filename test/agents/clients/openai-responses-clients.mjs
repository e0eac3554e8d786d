/**
 * Run by Node 24 (test/e2e/openai-responses-clients.test.ts): the newest `openai` SDK (7.x), the Vercel AI SDK's
 * default `openai(id)` provider and the OpenAI Agents SDK (both speak the Responses API) against the gateway's `/v1/responses`, on every model
 * given. Prints one JSON report on stdout; the test asserts on it. Inputs: OPENAI_BASE_URL (the gateway's `/v1`),
 * OPENAI_API_KEY, MODELS (comma-separated): the AI SDK's default provider reads the first two itself, as its users set them.
 */
import { openai } from '@ai-sdk/openai';
import { Agent, run, tool as agentTool } from '@openai/agents';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';

const baseURL = process.env.OPENAI_BASE_URL;
const apiKey = process.env.OPENAI_API_KEY;
const models = process.env.MODELS.split(',');
const client = new OpenAI({ apiKey, baseURL, maxRetries: 0 });

const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: false,
};

async function outcome(work) {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    return {
      ok: false,
      status: error?.status ?? null,
      name: error?.constructor?.name ?? null,
      message: String(error?.stack ?? error?.message ?? error),
    };
  }
}

const report = {};
for (const model of models) {
  const entry = {};
  entry.create = await outcome(async () => {
    const response = await client.responses.create({ model, input: 'Tell me about toll roads.' });
    return { id: response.id, status: response.status, text: response.output_text, usage: response.usage };
  });
  entry.stream = await outcome(async () => {
    const stream = client.responses.stream({ model, input: 'Describe a bridge.', store: false });
    const types = [];
    let deltas = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') deltas += event.delta;
    }
    const final = await stream.finalResponse();
    return { types, deltas, text: final.output_text, status: final.status, usage: final.usage };
  });
  entry.toolLoop = await outcome(async () => {
    const input = [{ role: 'user', content: 'Weather in Lisbon? [[sim tool=get_weather]]' }];
    const first = await client.responses.create({
      model,
      input,
      tools: [weatherTool],
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    const calls = first.output.filter((item) => item.type === 'function_call');
    const outputs = calls.map((call) => ({
      type: 'function_call_output',
      call_id: call.call_id,
      output: JSON.stringify({ city: JSON.parse(call.arguments).city, celsius: 21 }),
    }));
    const second = await client.responses.create({
      model,
      input: [...input, ...first.output, ...outputs],
      tools: [weatherTool],
      store: false,
    });
    return {
      calls: calls.map((call) => call.name),
      finalText: second.output_text,
      finalItems: second.output.map((item) => item.type),
    };
  });
  entry.customTool = await outcome(async () => {
    const tools = [{ type: 'custom', name: 'apply_patch', description: 'Apply a patch' }];
    const input = [{ role: 'user', content: 'Fix it. [[sim tool=apply_patch]]' }];
    const first = await client.responses.stream({ model, input, tools, store: false }).finalResponse();
    const call = first.output.find((item) => item.type === 'custom_tool_call');
    const second = await client.responses.create({
      model,
      input: [
        ...input,
        ...first.output,
        { type: 'custom_tool_call_output', call_id: call.call_id, output: 'patch applied' },
      ],
      tools,
      store: false,
    });
    return { name: call.name, inputType: typeof call.input, finalText: second.output_text };
  });
  entry.previousResponse = await outcome(async () => {
    const first = await client.responses.create({ model, input: 'Remember the word turnpike.' });
    const second = await client.responses.create({ model, input: 'Which word?', previous_response_id: first.id });
    const items = await client.responses.inputItems.list(second.id, { order: 'asc' });
    return {
      text: second.output_text,
      inputItemTypes: items.data.map((item) => item.type),
      previous: second.previous_response_id === first.id,
    };
  });
  entry.aiGenerateText = await outcome(async () => {
    const result = await generateText({ model: openai(model), prompt: 'Say something about bridges.', maxRetries: 0 });
    return { text: result.text, finishReason: result.finishReason, usage: result.usage };
  });
  entry.aiStreamText = await outcome(async () => {
    const result = streamText({ model: openai(model), prompt: 'Say something about rivers.', maxRetries: 0 });
    return { text: await result.text, finishReason: await result.finishReason, usage: await result.usage };
  });
  entry.aiToolCall = await outcome(async () => {
    let ran = 0;
    const result = await generateText({
      model: openai(model),
      prompt: 'Weather in Porto? [[sim tool=get_weather]]',
      tools: {
        get_weather: tool({
          description: 'Current weather for a city',
          inputSchema: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            ran += 1;
            return { city, celsius: 19 };
          },
        }),
      },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    return {
      ran,
      steps: result.steps.map((step) => step.finishReason),
      text: result.text,
      toolNames: result.steps.flatMap((step) => step.toolCalls.map((call) => call.toolName)),
    };
  });
  entry.agentsRun = await outcome(async () => {
    const getWeather = agentTool({
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: z.object({ city: z.string() }),
      execute: async ({ city }) => `${city}: 21 celsius`,
    });
    const agent = new Agent({ name: 'Assistant', instructions: 'Be brief.', model, tools: [getWeather] });
    const result = await run(agent, 'Weather in Lisbon? [[sim tool=get_weather]]');
    return { finalOutput: result.finalOutput, items: result.newItems.map((item) => item.type) };
  });
  report[model] = entry;
}
process.stdout.write(JSON.stringify(report));
