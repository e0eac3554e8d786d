/**
 * The `mimeType` Gemini requires beside a `fileData.fileUri`, guessed from the URL's file extension: the
 * canonical request carries no media type for URL sources, and fetching the URL (or a HEAD request) would
 * add a round trip per part to every request. Gemini itself reads the file; a wrong guess within the same
 * kind (png vs jpeg) is harmless, a wrong kind is not, so each block kind has its own fallback.
 */

const BY_EXTENSION: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  heic: 'image/heic',
  heif: 'image/heif',
  pdf: 'application/pdf',
  txt: 'text/plain',
  md: 'text/markdown',
  html: 'text/html',
  htm: 'text/html',
  csv: 'text/csv',
  xml: 'text/xml',
  json: 'application/json',
  mp3: 'audio/mp3',
  wav: 'audio/wav',
  mp4: 'video/mp4',
};

/** Used when the extension is missing or unknown: an image block is most likely a JPEG, a document a PDF. */
const FALLBACK = { image: 'image/jpeg', document: 'application/pdf' } as const;

export function guessMimeType(url: string, kind: keyof typeof FALLBACK): string {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    path = url.split(/[?#]/, 1)[0] ?? '';
  }
  const dot = path.lastIndexOf('.');
  const extension = dot > path.lastIndexOf('/') ? path.slice(dot + 1).toLowerCase() : '';
  return BY_EXTENSION[extension] ?? FALLBACK[kind];
}
