/**
 * One model call with plain fetch on the OpenAI Chat Completions or the Anthropic Messages API, each with its own
 * authentication header: for bursts, where an SDK's retries and error classes would only get in the way.
 */
export type ClientProtocol = 'openai' | 'anthropic';

export interface ProtocolReply {
  status: number;
  /** The reply's JSON, in the protocol's own shape. */
  body: any;
}

export async function chatOn(
  protocol: ClientProtocol,
  baseUrl: string,
  key: string,
  body: { model: string; max_tokens: number; messages: Array<{ role: 'user'; content: string }> },
): Promise<ProtocolReply> {
  const response = await fetch(protocol === 'openai' ? `${baseUrl}/v1/chat/completions` : `${baseUrl}/v1/messages`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(protocol === 'openai'
        ? { authorization: `Bearer ${key}` }
        : { 'x-api-key': key, 'anthropic-version': '2023-06-01' }),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}
