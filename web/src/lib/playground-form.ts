import type { PlaygroundRequest } from '../api/playground';
import type { ModelInfo } from '../api/types';

/** The playground form's fields as typed (numbers as text: empty means the model's default). */
export interface PlaygroundForm {
  model: string;
  system: string;
  temperature: string;
  maxTokens: string;
  effort: '' | 'low' | 'medium' | 'high';
  toolsText: string;
}

/** The request the form stands for with `messages`, or why the tools box is not usable. */
export function requestFromForm(
  form: PlaygroundForm,
  model: ModelInfo | undefined,
  messages: PlaygroundRequest['messages'],
): { request: PlaygroundRequest; toolsError?: undefined } | { request?: undefined; toolsError: string } {
  let tools: PlaygroundRequest['tools'];
  if (form.toolsText.trim() !== '' && model?.capabilities.tools === true) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(form.toolsText);
    } catch {
      parsed = undefined;
    }
    if (!Array.isArray(parsed))
      return { toolsError: 'Tools are a JSON list: [{"name": "get_weather", "parameters": {…}}].' };
    tools = parsed as PlaygroundRequest['tools'];
  }
  const temperature = form.temperature.trim() === '' ? undefined : Number(form.temperature);
  const maxTokens = form.maxTokens.trim() === '' ? undefined : Number(form.maxTokens);
  return {
    request: {
      model: form.model,
      ...(form.system.trim() === '' ? {} : { system: form.system }),
      messages,
      ...(temperature === undefined ? {} : { temperature }),
      ...(maxTokens === undefined ? {} : { maxTokens }),
      ...(form.effort === '' || model?.capabilities.reasoning !== true ? {} : { reasoningEffort: form.effort }),
      ...(tools === undefined || tools.length === 0 ? {} : { tools }),
    },
  };
}
