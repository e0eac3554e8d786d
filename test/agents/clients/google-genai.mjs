/**
 * Run by Node 24 (test/e2e/google-genai-sdk.test.ts): the newest @google/genai against the gateway, configured as
 * its users configure it for another endpoint (`httpOptions.baseUrl` and the API key), on every model it is given.
 * Prints one JSON report on stdout; the test asserts on it. Inputs: GATEWAY_URL, API_KEY, MODELS (comma-separated).
 */
import { GoogleGenAI } from '@google/genai';

const baseUrl = process.env.GATEWAY_URL;
const apiKey = process.env.API_KEY;
const models = process.env.MODELS.split(',');
const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl, retryOptions: { attempts: 1 } } });

async function outcome(work) {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    return {
      ok: false,
      status: error?.status ?? null,
      name: error?.constructor?.name ?? null,
      message: String(error?.message ?? error),
    };
  }
}

const lookup = {
  name: 'lookup',
  description: 'Look a word up in the glossary',
  parametersJsonSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
};
const schemaLookup = {
  name: 'lookup',
  description: 'Look a word up in the glossary',
  parameters: { type: 'OBJECT', properties: { word: { type: 'STRING' } }, required: ['word'] },
};

/** A function-calling loop by hand, as the SDK's docs show it: call, run the function, send its response back. */
async function functionLoop(model, stream, declaration) {
  const chat = ai.chats.create({
    model,
    config: { tools: [{ functionDeclarations: [declaration] }], thinkingConfig: { includeThoughts: true } },
  });
  const first = stream
    ? await collect(await chat.sendMessageStream({ message: 'What is a turnpike? [[sim tool=lookup]]' }))
    : await chat.sendMessage({ message: 'What is a turnpike? [[sim tool=lookup]]' });
  const calls = first.functionCalls ?? [];
  if (calls.length === 0) throw new Error(`no function call in ${JSON.stringify(first)}`);
  const responses = calls.map((call) => ({
    functionResponse: {
      id: call.id,
      name: call.name,
      response: { output: `glossary entry for ${call.args.word}: a gate where a toll is paid` },
    },
  }));
  const second = stream
    ? await collect(await chat.sendMessageStream({ message: responses }))
    : await chat.sendMessage({ message: responses });
  return {
    calls: calls.map((call) => ({ name: call.name, args: call.args, hasId: typeof call.id === 'string' })),
    firstFinish: first.candidates?.[0]?.finishReason,
    finalText: second.text ?? '',
    finalFinish: second.candidates?.[0]?.finishReason,
    historyLength: chat.getHistory().length,
  };
}

/** A stream's chunks folded the way a caller reads them: the text, the calls, the last chunk's finish and usage. */
async function collect(stream) {
  let text = '';
  const functionCalls = [];
  let last;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks += 1;
    text += chunk.text ?? '';
    functionCalls.push(...(chunk.functionCalls ?? []));
    last = chunk;
  }
  return {
    text,
    functionCalls,
    candidates: last?.candidates,
    usageMetadata: last?.usageMetadata,
    chunks,
    responseId: last?.responseId,
    modelVersion: last?.modelVersion,
  };
}

const report = { models: {} };
report.list = await outcome(async () => {
  const names = [];
  for await (const model of await ai.models.list())
    names.push({ name: model.name, inputTokenLimit: model.inputTokenLimit, outputTokenLimit: model.outputTokenLimit });
  return names;
});
for (const model of models) {
  const entry = {};
  entry.get = await outcome(async () => {
    const found = await ai.models.get({ model });
    return { name: found.name, inputTokenLimit: found.inputTokenLimit, outputTokenLimit: found.outputTokenLimit };
  });
  entry.generate = await outcome(async () => {
    const response = await ai.models.generateContent({
      model,
      contents: 'Tell me about bridges.',
      config: { systemInstruction: 'Answer briefly.', maxOutputTokens: 300 },
    });
    return {
      text: response.text,
      finishReason: response.candidates?.[0]?.finishReason,
      usage: response.usageMetadata,
      modelVersion: response.modelVersion,
      responseId: response.responseId,
    };
  });
  entry.stream = await outcome(async () => {
    const folded = await collect(
      await ai.models.generateContentStream({
        model,
        contents: 'Tell me about bridges.',
        config: { systemInstruction: 'Answer briefly.', maxOutputTokens: 300 },
      }),
    );
    return {
      text: folded.text,
      chunks: folded.chunks,
      finishReason: folded.candidates?.[0]?.finishReason,
      usage: folded.usageMetadata,
      modelVersion: folded.modelVersion,
    };
  });
  entry.countTokens = await outcome(async () => {
    const counted = await ai.models.countTokens({ model, contents: 'Tell me about bridges.' });
    return { totalTokens: counted.totalTokens };
  });
  entry.json = await outcome(async () => {
    const response = await ai.models.generateContent({
      model,
      contents: 'Name a bridge.',
      config: {
        responseMimeType: 'application/json',
        responseJsonSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      },
    });
    return { text: response.text ?? '' };
  });
  entry.loop = await outcome(() => functionLoop(model, false, lookup));
  entry.streamLoop = await outcome(() => functionLoop(model, true, schemaLookup));
  report.models[model] = entry;
}
process.stdout.write(JSON.stringify(report));
