import type { PlaygroundRequest } from '../api/playground';
import type { CodeSample } from '../components/CodeTabs';

/**
 * The playground's request as code that runs as copied against this gateway: curl, and the OpenAI, Anthropic and
 * Google GenAI SDKs for JavaScript (ES modules: a `.mjs` file, or TypeScript, unchanged). The key is read from
 * `TOLLGATE_API_KEY` and never assigned: a placeholder assigned in a pasted snippet would overwrite the user's real
 * key.
 */
export function playgroundSamples(baseUrl: string, request: PlaygroundRequest): CodeSample[] {
  const root = baseUrl.replace(/\/+$/, '');
  return [
    { label: 'curl', code: curlSample(root, request) },
    { label: 'OpenAI SDK', code: openaiSample(root, request) },
    { label: 'Anthropic SDK', code: anthropicSample(root, request) },
    { label: 'Google GenAI SDK', code: googleSample(root, request) },
  ];
}

/** A value as a JavaScript literal (JSON is one). */
function literal(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** The chat-completions body the playground sends to the pipeline (the server builds the same one). */
export function chatCompletionsBody(request: PlaygroundRequest): Record<string, unknown> {
  return {
    model: request.model,
    messages: [...(request.system ? [{ role: 'system', content: request.system }] : []), ...request.messages],
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.maxTokens === undefined ? {} : { max_tokens: request.maxTokens }),
    ...(request.reasoningEffort === undefined ? {} : { reasoning_effort: request.reasoningEffort }),
    ...(request.tools === undefined || request.tools.length === 0
      ? {}
      : {
          tools: request.tools.map((tool) => ({
            type: 'function',
            function: {
              name: tool.name,
              ...(tool.description === undefined ? {} : { description: tool.description }),
              parameters: tool.parameters ?? { type: 'object', properties: {} },
            },
          })),
        }),
  };
}

function curlSample(root: string, request: PlaygroundRequest): string {
  const body = JSON.stringify(chatCompletionsBody(request), null, 2).replaceAll("'", "'\\''");
  return `# Uses the key in the TOLLGATE_API_KEY environment variable of your shell.
curl ${root}/v1/chat/completions \\
  -H "Authorization: Bearer $TOLLGATE_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '${body}'`;
}

function openaiSample(root: string, request: PlaygroundRequest): string {
  return `// npm install openai
import OpenAI from "openai";

const client = new OpenAI({ baseURL: "${root}/v1", apiKey: process.env.TOLLGATE_API_KEY });

const completion = await client.chat.completions.create(${literal(chatCompletionsBody(request))});
console.log(completion.choices[0].message.content ?? completion.choices[0].message.tool_calls);`;
}

/** The same request in Anthropic's Messages shape (`max_tokens` is required there: the model's default otherwise). */
function anthropicSample(root: string, request: PlaygroundRequest): string {
  const body = {
    model: request.model,
    max_tokens: request.maxTokens ?? 1024,
    ...(request.system ? { system: request.system } : {}),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    messages: request.messages,
    ...(request.tools === undefined || request.tools.length === 0
      ? {}
      : {
          tools: request.tools.map((tool) => ({
            name: tool.name,
            ...(tool.description === undefined ? {} : { description: tool.description }),
            input_schema: tool.parameters ?? { type: 'object', properties: {} },
          })),
        }),
  };
  return `// npm install @anthropic-ai/sdk
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({ baseURL: "${root}", apiKey: process.env.TOLLGATE_API_KEY });

const message = await client.messages.create(${literal(body)});
for (const block of message.content) console.log(block.type === "text" ? block.text : block);`;
}

/** The same request in Google's shape: assistant turns are the `model` role, the system prompt an instruction. */
function googleSample(root: string, request: PlaygroundRequest): string {
  const config = {
    ...(request.system ? { systemInstruction: request.system } : {}),
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.maxTokens === undefined ? {} : { maxOutputTokens: request.maxTokens }),
    ...(request.tools === undefined || request.tools.length === 0
      ? {}
      : {
          tools: [
            {
              functionDeclarations: request.tools.map((tool) => ({
                name: tool.name,
                ...(tool.description === undefined ? {} : { description: tool.description }),
                parameters: tool.parameters ?? { type: 'object', properties: {} },
              })),
            },
          ],
        }),
  };
  const body = {
    model: request.model,
    contents: request.messages.map((message) => ({
      role: message.role === 'assistant' ? 'model' : 'user',
      parts: [{ text: message.content }],
    })),
    ...(Object.keys(config).length === 0 ? {} : { config }),
  };
  return `// npm install @google/genai
import { GoogleGenAI } from "@google/genai";

const ai = new GoogleGenAI({ apiKey: process.env.TOLLGATE_API_KEY, httpOptions: { baseUrl: "${root}" } });

const response = await ai.models.generateContent(${literal(body)});
console.log(response.text ?? response.functionCalls);`;
}
