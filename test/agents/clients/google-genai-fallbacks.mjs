/**
 * Run by Node 24 (test/e2e/request-fallback-chains.test.ts): the newest @google/genai sends Tollgate's `models`
 * fallback list the way the SDK sends any extra body field (`config.httpOptions.extraBody`), once whole and once
 * streamed. Prints one JSON report on stdout. Inputs: GATEWAY_URL, API_KEY, MODEL, FALLBACKS (comma-separated), PROMPT.
 */
import { GoogleGenAI } from '@google/genai';

const ai = new GoogleGenAI({
  apiKey: process.env.API_KEY,
  httpOptions: { baseUrl: process.env.GATEWAY_URL, retryOptions: { attempts: 1 } },
});
const config = { httpOptions: { extraBody: { models: process.env.FALLBACKS.split(',') } } };
const request = { model: process.env.MODEL, contents: process.env.PROMPT, config };

async function outcome(work) {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    return { ok: false, status: error?.status ?? null, message: String(error?.message ?? error) };
  }
}

const headersOf = (response) => response.sdkHttpResponse?.headers ?? {};

const whole = await outcome(async () => {
  const response = await ai.models.generateContent(request);
  return { text: response.text, modelVersion: response.modelVersion, headers: headersOf(response) };
});
const stream = await outcome(async () => {
  let text = '';
  let modelVersion;
  let headers = {};
  for await (const chunk of await ai.models.generateContentStream(request)) {
    text += chunk.text ?? '';
    modelVersion ??= chunk.modelVersion;
    if (Object.keys(headers).length === 0) headers = headersOf(chunk);
  }
  return { text, modelVersion, headers };
});
process.stdout.write(JSON.stringify({ whole, stream }));
