/**
 * A Gemini request as the simulator reads it once `gemini-request-shape.ts` has normalised it (camelCase
 * names, enums upper-cased) and `gemini-validate.ts` has checked it.
 */

export interface GeminiFunctionCall {
  id?: string;
  name: string;
  args?: Record<string, unknown>;
}

export interface GeminiFunctionResponse {
  id?: string;
  name: string;
  response?: Record<string, unknown>;
}

export interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  inlineData?: { mimeType?: string; data?: string };
  fileData?: { mimeType?: string; fileUri?: string };
  functionCall?: GeminiFunctionCall;
  functionResponse?: GeminiFunctionResponse;
  executableCode?: Record<string, unknown>;
  codeExecutionResult?: Record<string, unknown>;
}

export interface GeminiContent {
  role?: string;
  parts?: GeminiPart[];
}

export interface GeminiFunctionDeclaration {
  name?: string;
  description?: string;
  parameters?: Record<string, unknown>;
  parametersJsonSchema?: unknown;
}

export interface GeminiTool {
  functionDeclarations?: GeminiFunctionDeclaration[];
  googleSearch?: Record<string, unknown>;
}

export interface GeminiThinkingConfig {
  includeThoughts?: boolean;
  thinkingBudget?: number;
  thinkingLevel?: string;
}

export interface GeminiGenerationConfig {
  stopSequences?: string[];
  responseMimeType?: string;
  responseSchema?: Record<string, unknown>;
  responseJsonSchema?: unknown;
  candidateCount?: number;
  responseLogprobs?: boolean;
  logprobs?: number;
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  thinkingConfig?: GeminiThinkingConfig;
}

export interface GeminiRequest {
  contents: GeminiContent[];
  systemInstruction?: GeminiContent;
  tools?: GeminiTool[];
  toolConfig?: { functionCallingConfig?: { mode?: string; allowedFunctionNames?: string[] } };
  generationConfig?: GeminiGenerationConfig;
}

/** What one request turns the model into: whether it thinks, and whether its thoughts are shown. */
export interface GeminiThinking {
  active: boolean;
  includeThoughts: boolean;
  /** Length factor of the reasoning (thinking level). */
  scale: number;
}
