/** Comma-separated model ids or family words as the API's allowlist; empty text: every model (null). */
export function modelList(text: string): string[] | null {
  const models = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  return models.length === 0 ? null : models;
}
