/** Key-like strings (`sk-…`, Google's `AIza…`) and `?key=` / `api_key=` query values replaced, for text that leaves the process. */
export function scrubSecrets(text: string): string {
  return text
    .replace(/\b(sk|key|AIza)[-_A-Za-z0-9]{12,}/g, '[redacted]')
    .replace(/([?&](?:key|api_key)=)[^&\s]+/gi, '$1[redacted]');
}
