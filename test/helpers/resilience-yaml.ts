/**
 * A tollgate.yaml for the fault suites: short vendor timeouts and two attempts on every vendor, so each injected
 * fault resolves within a test; `keepAliveMs`, when given, sets the stream keep-alive (and stream-start window).
 */
export function resilienceYaml(keepAliveMs?: number): string {
  return `
${keepAliveMs === undefined ? '' : `streamKeepAliveMs: ${keepAliveMs}\n`}vendors:
${['openai', 'anthropic', 'gemini', 'deepseek']
  .map(
    (vendor) => `  ${vendor}:
    timeouts: { connectMs: 1000, firstByteMs: 400, nonStreamMs: 400, idleMs: 1000 }
    retries: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 1500 }`,
  )
  .join('\n')}
`;
}
