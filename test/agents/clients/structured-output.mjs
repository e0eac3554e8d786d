/**
 * Run by Node 24 (test/e2e/structured-output-clients.test.ts): structured output through the gateway with the newest
 * clients on one model (MODEL): the openai SDK's `response_format` json_schema on chat completions, the Vercel AI
 * SDK's `generateObject` over chat completions and over the Responses API, LangChain's `withStructuredOutput` and
 * the OpenAI Agents SDK's `outputType`. Then a Responses stream the vendor breaks mid-way (STREAM_MODEL), read with
 * the openai SDK. Prints one JSON report on stdout; the test asserts on it. Inputs: OPENAI_BASE_URL (the gateway's
 * `/v1`), OPENAI_API_KEY, MODEL, STREAM_MODEL.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { ChatOpenAI } from '@langchain/openai';
import { Agent, run } from '@openai/agents';
import { generateObject } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';

const baseURL = process.env.OPENAI_BASE_URL;
const apiKey = process.env.OPENAI_API_KEY;
const model = process.env.MODEL;
const client = new OpenAI({ apiKey, baseURL, maxRetries: 0 });
const provider = createOpenAI({ apiKey, baseURL });

const City = z.object({ city: z.string(), population: z.number().int(), landmarks: z.array(z.string()) });
const CITY_SCHEMA = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    population: { type: 'integer' },
    landmarks: { type: 'array', items: { type: 'string' } },
  },
  required: ['city', 'population', 'landmarks'],
  additionalProperties: false,
};

async function outcome(work) {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    return {
      ok: false,
      status: error?.status ?? null,
      code: error?.code ?? null,
      name: error?.constructor?.name ?? null,
      message: String(error?.stack ?? error?.message ?? error),
    };
  }
}

/** The object after the schema check each client runs itself (zod here, as the SDKs do). */
const checked = (value) => City.parse(value);

const report = {};
report.openaiResponseFormat = await outcome(async () => {
  const completion = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Describe a city.' }],
    response_format: { type: 'json_schema', json_schema: { name: 'city', schema: CITY_SCHEMA, strict: true } },
  });
  return checked(JSON.parse(completion.choices[0].message.content));
});
report.aiGenerateObjectChat = await outcome(async () => {
  const result = await generateObject({
    model: provider.chat(model),
    schema: City,
    prompt: 'Describe a city.',
    maxRetries: 0,
  });
  return checked(result.object);
});
report.aiGenerateObjectResponses = await outcome(async () => {
  const result = await generateObject({
    model: provider(model),
    schema: City,
    prompt: 'Describe a city.',
    maxRetries: 0,
  });
  return checked(result.object);
});
report.langchainStructured = await outcome(async () => {
  const chat = new ChatOpenAI({ model, apiKey, configuration: { baseURL }, maxRetries: 0 });
  return checked(await chat.withStructuredOutput(City, { name: 'city' }).invoke('Describe a city.'));
});
report.agentsOutputType = await outcome(async () => {
  const agent = new Agent({ name: 'Guide', instructions: 'Be brief.', model, outputType: City });
  const result = await run(agent, 'Describe a city.');
  return checked(result.finalOutput);
});
report.failedStream = await outcome(async () => {
  const stream = await client.responses.create({
    model: process.env.STREAM_MODEL,
    input: 'Tell me about tolls. [[sim fault=error status=500 after=2]]',
    stream: true,
    store: false,
  });
  const types = [];
  try {
    for await (const event of stream) types.push(event.type);
  } catch (error) {
    return { types, errorName: error?.constructor?.name ?? null, code: error?.code ?? null };
  }
  return { types, errorName: null, code: null };
});
process.stdout.write(JSON.stringify(report));
