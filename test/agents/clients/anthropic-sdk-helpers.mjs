/**
 * Run by Node 24 (test/e2e/anthropic-sdk-helpers.test.ts): the newest @anthropic-ai/sdk and @langchain/anthropic
 * against the gateway, one model of each family, with the helpers their users reach for. Prints one JSON report on
 * stdout; the test asserts on it. Inputs: GATEWAY_URL, API_KEY, MODELS (comma-separated).
 */
import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { ChatAnthropic } from '@langchain/anthropic';

const baseURL = process.env.GATEWAY_URL;
const apiKey = process.env.API_KEY;
const models = process.env.MODELS.split(',');
const client = new Anthropic({ apiKey, baseURL, maxRetries: 0 });

const lookup = () =>
  betaTool({
    name: 'lookup',
    description: 'Look a word up in the glossary',
    inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    run: ({ word }) => `glossary entry for ${word}: a gate where a toll is paid`,
  });
const toolPrompt = [{ role: 'user', content: 'What is a turnpike? [[sim tool=lookup]]' }];

async function outcome(work) {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    return {
      ok: false,
      status: error?.status ?? null,
      errorCode: error?.errorCode ?? null,
      name: error?.constructor?.name ?? null,
      message: String(error?.message ?? error),
    };
  }
}

/** A tool loop: the messages it sent and the final reply's text. */
async function runTools(extra) {
  const runner = client.beta.messages.toolRunner({
    model: extra.model,
    max_tokens: 400,
    messages: toolPrompt,
    tools: [lookup()],
    ...extra.params,
  });
  const stops = [];
  for await (const message of runner) stops.push(message.stop_reason);
  const final = await runner.done();
  return {
    stops,
    finalText: final.content
      .filter((block) => block.type === 'text')
      .map((block) => block.text)
      .join(''),
  };
}

const report = {};
for (const model of models) {
  const entry = {};
  entry.finalMessage = await outcome(async () => {
    const stream = client.messages.stream({
      model,
      max_tokens: 300,
      messages: [{ role: 'user', content: 'Tell me about bridges.' }],
    });
    let startInput = null;
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_start') startInput = event.message.usage.input_tokens;
    });
    const message = await stream.finalMessage();
    const whole = await client.messages.create({
      model,
      max_tokens: 300,
      messages: [{ role: 'user', content: 'Tell me about bridges.' }],
    });
    return {
      stopReason: message.stop_reason,
      text: message.content
        .filter((block) => block.type === 'text')
        .map((block) => block.text)
        .join(''),
      wholeText: whole.content
        .filter((block) => block.type === 'text')
        .map((block) => block.text)
        .join(''),
      startInput,
      usage: message.usage,
      wholeUsage: whole.usage,
    };
  });
  // The runner threads by default; the gateway refuses threads (thread_unsupported_request) and the runner then
  // replays the whole history without one.
  entry.toolRunnerThreaded = await outcome(() => runTools({ model, params: {} }));
  // A runner asked not to thread sends the whole history from the start.
  entry.toolRunnerNoThread = await outcome(() => runTools({ model, params: { thread: false } }));
  entry.langchain = await outcome(async () => {
    const chat = new ChatAnthropic({
      model,
      apiKey,
      anthropicApiUrl: baseURL,
      maxTokens: 300,
      maxRetries: 0,
      streaming: true,
    });
    let aggregate;
    for await (const chunk of await chat.stream('Tell me about ferries.'))
      aggregate = aggregate === undefined ? chunk : aggregate.concat(chunk);
    const invoked = await new ChatAnthropic({
      model,
      apiKey,
      anthropicApiUrl: baseURL,
      maxTokens: 300,
      maxRetries: 0,
    }).invoke('Tell me about ferries.');
    return {
      streamedUsage: aggregate.usage_metadata,
      invokedUsage: invoked.usage_metadata,
      text: String(
        aggregate.content === ''
          ? ''
          : typeof aggregate.content === 'string'
            ? aggregate.content
            : JSON.stringify(aggregate.content),
      ),
    };
  });
  report[model] = entry;
}
process.stdout.write(JSON.stringify(report));
