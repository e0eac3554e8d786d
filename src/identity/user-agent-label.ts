/**
 * "Firefox on Linux", "Safari on iPhone": enough for a person to recognise their own devices in the sessions
 * list. Written here rather than taken from a User-Agent parsing library: none is installed, and a label needs
 * only the browser and system families, not versions or engines.
 */
export function userAgentLabel(userAgent: string | null): string {
  if (userAgent === null || userAgent.trim() === '') return 'Unknown device';
  const browser = first(userAgent, [
    [/Edg(e|A|iOS)?\//, 'Edge'],
    [/OPR\/|Opera/, 'Opera'],
    [/Firefox\/|FxiOS\//, 'Firefox'],
    [/Chrome\/|CriOS\/|Chromium\//, 'Chrome'],
    [/Safari\//, 'Safari'],
    [/curl\//, 'curl'],
    [/node|undici/i, 'Node.js'],
  ]);
  const system = first(userAgent, [
    [/iPhone/, 'iPhone'],
    [/iPad/, 'iPad'],
    [/Android/, 'Android'],
    [/Windows/, 'Windows'],
    [/Mac OS X|Macintosh/, 'macOS'],
    [/CrOS/, 'ChromeOS'],
    [/Linux/, 'Linux'],
  ]);
  if (browser === undefined && system === undefined) return 'Unknown device';
  if (system === undefined) return browser!;
  return `${browser ?? 'Browser'} on ${system}`;
}

function first(text: string, patterns: ReadonlyArray<readonly [RegExp, string]>): string | undefined {
  return patterns.find(([pattern]) => pattern.test(text))?.[1];
}
