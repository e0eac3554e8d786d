/**
 * Wire types of the Gemini Developer API v1beta (docs/protocols/wire-gemini.md), shared by the Gemini adapter
 * (src/providers/gemini) and the client-facing protocol (src/protocols/gemini-generate).
 * Only the fields Tollgate writes or reads; everything a response may carry is optional, because the API
 * leaves out empty fields (proto3 JSON) and a mapper must not trust any of them to be present.
 */

export interface GeminiInlineData {
  mimeType: string;
  /** Base64 (standard alphabet). */
  data: string;
}

export interface GeminiFileData {
  mimeType: string;
  fileUri: string;
}

export interface GeminiFunctionCall {
  name: string;
  /** A JSON object, never a string. */
  args?: Record<string, unknown>;
  /** Often absent on the Developer API. */
  id?: string;
}

export interface GeminiFunctionResponse {
  /** Required by the API: the name of the call this answers. */
  name: string;
  /** By convention `{output: …}` or `{error: …}`. */
  response: Record<string, unknown>;
  id?: string;
}

/** A part holds exactly one data field; `thought` and `thoughtSignature` ride beside it. */
export interface GeminiPart {
  text?: string;
  /** True on a text part that is a thought summary (only sent when `includeThoughts` was asked for). */
  thought?: boolean;
  /** Opaque base64; must come back on the same part in later requests. */
  thoughtSignature?: string;
  inlineData?: GeminiInlineData;
  fileData?: GeminiFileData;
  functionCall?: GeminiFunctionCall;
  functionResponse?: GeminiFunctionResponse;
  /** Code-execution parts: never requested by the gateway, ignored when they appear. */
  executableCode?: unknown;
  codeExecutionResult?: unknown;
}

export type GeminiRole = 'user' | 'model';

export interface GeminiContent {
  role: GeminiRole;
  parts: GeminiPart[];
}

export interface GeminiFunctionDeclaration {
  name: string;
  description?: string;
  /** The arguments' JSON Schema, as written (the older `parameters` takes only an OpenAPI subset). */
  parametersJsonSchema?: Record<string, unknown>;
}

/** Function declarations, or Google Search grounding (`googleSearch: {}`): one kind per tool object. */
export interface GeminiTool {
  functionDeclarations?: GeminiFunctionDeclaration[];
  googleSearch?: Record<string, unknown>;
}

/** What Google Search grounding found and which parts of the text each page supports. */
export interface GeminiGroundingMetadata {
  webSearchQueries?: string[];
  groundingChunks?: Array<{ web?: { uri?: string; title?: string } }>;
  groundingSupports?: Array<{
    segment?: { startIndex?: number; endIndex?: number; text?: string };
    groundingChunkIndices?: number[];
  }>;
  searchEntryPoint?: { renderedContent?: string };
}

export type GeminiFunctionCallingMode = 'AUTO' | 'ANY' | 'NONE' | 'VALIDATED';

export interface GeminiToolConfig {
  functionCallingConfig: { mode: GeminiFunctionCallingMode; allowedFunctionNames?: string[] };
}

export type GeminiThinkingLevel = 'MINIMAL' | 'LOW' | 'MEDIUM' | 'HIGH';

/** Gemini 2.5 takes a budget, Gemini 3 a level; never both. */
export interface GeminiThinkingConfig {
  includeThoughts?: boolean;
  thinkingBudget?: number;
  thinkingLevel?: GeminiThinkingLevel;
}

export interface GeminiGenerationConfig {
  temperature?: number;
  topP?: number;
  topK?: number;
  stopSequences?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  maxOutputTokens?: number;
  responseMimeType?: string;
  /** Structured output's JSON Schema, as written (the older `responseSchema` takes only an OpenAPI subset). */
  responseJsonSchema?: Record<string, unknown>;
  thinkingConfig?: GeminiThinkingConfig;
  candidateCount?: number;
  responseLogprobs?: boolean;
  /** Alternatives per token in `logprobsResult.topCandidates` (0–20), with `responseLogprobs`. */
  logprobs?: number;
}

export interface GeminiGenerateContentRequest {
  contents: GeminiContent[];
  systemInstruction?: { parts: GeminiPart[] };
  tools?: GeminiTool[];
  toolConfig?: GeminiToolConfig;
  generationConfig?: GeminiGenerationConfig;
}

export interface GeminiCountTokensRequest {
  generateContentRequest: GeminiGenerateContentRequest & { model: string };
}

export interface GeminiCountTokensResponse {
  totalTokens?: number;
  cachedContentTokenCount?: number;
}

/** One token of `logprobsResult`. */
export interface GeminiLogprobsCandidate {
  token?: string;
  tokenId?: number;
  logProbability?: number;
}

/** A candidate's token log probabilities, when the request set `responseLogprobs`. */
export interface GeminiLogprobsResult {
  chosenCandidates?: GeminiLogprobsCandidate[];
  topCandidates?: Array<{ candidates?: GeminiLogprobsCandidate[] }>;
  logProbabilitySum?: number;
}

export interface GeminiCandidate {
  content?: { role?: string; parts?: GeminiPart[] };
  finishReason?: string;
  finishMessage?: string;
  index?: number;
  groundingMetadata?: GeminiGroundingMetadata;
  logprobsResult?: GeminiLogprobsResult;
  avgLogprobs?: number;
}

export interface GeminiUsageMetadata {
  /** Tollgate's extension (the other protocols carry it in their usage objects too): the request's charge. */
  cost?: string;
  cost_nano_usd?: string;
  /** Input tokens, cached ones included. */
  promptTokenCount?: number;
  cachedContentTokenCount?: number;
  /** Visible output only: thoughts are counted beside it. */
  candidatesTokenCount?: number;
  thoughtsTokenCount?: number;
  /** Results of server-side tools fed back to the model. */
  toolUsePromptTokenCount?: number;
  totalTokenCount?: number;
}

export interface GeminiGenerateContentResponse {
  candidates?: GeminiCandidate[];
  /** Present when the prompt itself was blocked; `candidates` is then missing. */
  promptFeedback?: { blockReason?: string };
  usageMetadata?: GeminiUsageMetadata;
  modelVersion?: string;
  responseId?: string;
}

/** One entry of `error.details`, told apart by its `@type` (`type.googleapis.com/google.rpc.RetryInfo`, …). */
export interface GeminiErrorDetail {
  '@type'?: string;
  /** RetryInfo: a protobuf Duration such as "37s" or "1.5s". */
  retryDelay?: string;
  /** ErrorInfo: e.g. "API_KEY_INVALID". */
  reason?: string;
  /** ErrorInfo: who defines `reason` ("googleapis.com"). */
  domain?: string;
  metadata?: Record<string, string>;
}

export interface GeminiError {
  code?: number;
  message?: string;
  /** The google.rpc status name, e.g. "RESOURCE_EXHAUSTED". */
  status?: string;
  details?: GeminiErrorDetail[];
}

export interface GeminiErrorBody {
  error: GeminiError;
}

/** One entry of `GET /v1beta/models` (Google's `Model`). */
export interface GeminiModel {
  /** Always `models/<id>`. */
  name: string;
  baseModelId: string;
  version: string;
  displayName: string;
  description: string;
  inputTokenLimit: number;
  outputTokenLimit: number;
  supportedGenerationMethods: string[];
  temperature?: number;
  maxTemperature?: number;
  topP?: number;
  topK?: number;
  thinking?: boolean;
}

export interface GeminiListModelsResponse {
  models: GeminiModel[];
  nextPageToken?: string;
}
