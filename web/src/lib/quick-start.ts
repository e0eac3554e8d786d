import type { CodeSample } from '../components/CodeTabs';

/**
 * Quick-start snippets for the official SDKs, pointed at this gateway, that run as copied. Without `key` they read
 * the key from `TOLLGATE_API_KEY` and never assign it (a placeholder assigned there would overwrite the user's
 * real key); with `key` (the dialog that shows a new key once) the curl sample sets it first.
 */
export function quickStartSamples(baseUrl: string, model = 'alpha-sonnet-5', key?: string): CodeSample[] {
  const root = baseUrl.replace(/\/+$/, '');
  const v1 = `${root}/v1`;
  const shellKey =
    key === undefined
      ? '# Uses the key in the TOLLGATE_API_KEY environment variable of your shell.'
      : `export TOLLGATE_API_KEY="${key}"`;
  const pythonKey = key === undefined ? 'os.environ["TOLLGATE_API_KEY"]' : `"${key}"`;
  const typescriptKey = key === undefined ? 'process.env.TOLLGATE_API_KEY' : `"${key}"`;
  return [
    {
      label: 'curl',
      code: `${shellKey}
curl ${v1}/chat/completions \\
  -H "Authorization: Bearer $TOLLGATE_API_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{
    "model": "${model}",
    "messages": [{"role": "user", "content": "Hello!"}]
  }'`,
    },
    {
      label: 'Python',
      code: `# pip install openai
import os
from openai import OpenAI

client = OpenAI(
    base_url="${v1}",
    api_key=${pythonKey},
)

completion = client.chat.completions.create(
    model="${model}",
    messages=[{"role": "user", "content": "Hello!"}],
)
print(completion.choices[0].message.content)`,
    },
    {
      label: 'TypeScript',
      code: `// npm install openai
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: "${v1}",
  apiKey: ${typescriptKey},
});

const completion = await client.chat.completions.create({
  model: "${model}",
  messages: [{ role: "user", content: "Hello!" }],
});
console.log(completion.choices[0].message.content);`,
    },
    {
      label: 'Anthropic SDK',
      code: `# pip install anthropic
import os
from anthropic import Anthropic

client = Anthropic(
    base_url="${root}",
    api_key=${pythonKey},
)

message = client.messages.create(
    model="${model}",
    max_tokens=1024,
    messages=[{"role": "user", "content": "Hello!"}],
)
print(message.content[0].text)`,
    },
  ];
}
