import type { CodeSample } from '../components/CodeTabs';

/** Quick-start snippets for the official SDKs, pointed at this gateway. The key comes from the environment, never inline. */
export function quickStartSamples(baseUrl: string, model = 'alpha-sonnet-5'): CodeSample[] {
  const v1 = `${baseUrl.replace(/\/+$/, '')}/v1`;
  return [
    {
      label: 'curl',
      code: `export TOLLGATE_API_KEY="sk-tg-…"

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
    api_key=os.environ["TOLLGATE_API_KEY"],
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
  apiKey: process.env.TOLLGATE_API_KEY,
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
    base_url="${baseUrl.replace(/\/+$/, '')}",
    api_key=os.environ["TOLLGATE_API_KEY"],
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
