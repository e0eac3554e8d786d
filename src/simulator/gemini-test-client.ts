/**
 * A minimal Gemini REST client for the simulator's tests (no Gemini SDK is installed): one call, the SSE
 * stream split on CRLF blank lines like the official SDK does, and the shapes the tests read.
 */

export interface GeminiPartOut {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { name: string; args: Record<string, unknown>; id?: string };
}

export interface GeminiResponseOut {
  candidates?: Array<{ content: { role: string; parts?: GeminiPartOut[] }; finishReason?: string; index: number }>;
  usageMetadata?: Record<string, unknown>;
  modelVersion?: string;
  responseId?: string;
  error?: { code: number; message: string; status: string; details?: unknown[] };
}

export interface GeminiCall {
  status: number;
  headers: Headers;
  raw: string;
  body: GeminiResponseOut;
  /** Stream chunks, in order (SSE `data:` payloads or the elements of the JSON array). */
  chunks: GeminiResponseOut[];
}

export type GeminiMethod = 'generateContent' | 'streamGenerateContent' | 'countTokens';

export async function callGemini(
  baseUrl: string,
  model: string,
  method: GeminiMethod,
  body: unknown,
  options: { key?: string | null; query?: string; sse?: boolean; headers?: Record<string, string> } = {},
): Promise<GeminiCall> {
  const sse = method === 'streamGenerateContent' && options.sse !== false;
  const query = [sse ? 'alt=sse' : '', options.query ?? ''].filter((part) => part !== '').join('&');
  const key = options.key === undefined ? 'test-key' : options.key;
  const response = await fetch(`${baseUrl}/v1beta/models/${model}:${method}${query === '' ? '' : `?${query}`}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key === null ? {} : { 'x-goog-api-key': key }),
      ...options.headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const raw = await response.text();
  let chunks: GeminiResponseOut[] = [];
  let parsed: GeminiResponseOut = {};
  if (method === 'streamGenerateContent' && response.status === 200) {
    chunks = sse
      ? raw
          .split('\r\n\r\n')
          .filter((event) => event.length > 0)
          .map((event) => JSON.parse(event.replace(/^data: /, '')) as GeminiResponseOut)
      : (JSON.parse(raw) as GeminiResponseOut[]);
  } else {
    parsed = JSON.parse(raw) as GeminiResponseOut;
  }
  return { status: response.status, headers: response.headers, raw, body: parsed, chunks };
}

export function partsOf(response: GeminiResponseOut): GeminiPartOut[] {
  return response.candidates?.[0]?.content.parts ?? [];
}

/** Visible (non-thought) text of a response or of all chunks of a stream. */
export function textOf(responses: GeminiResponseOut | GeminiResponseOut[]): string {
  const list = Array.isArray(responses) ? responses : [responses];
  return list
    .flatMap((response) =>
      partsOf(response)
        .filter((part) => part.thought !== true)
        .map((part) => part.text ?? ''),
    )
    .join('');
}
