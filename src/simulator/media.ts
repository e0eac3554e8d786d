/**
 * Checks of inline media shared by the vendor modules: strict base64, data URLs, and the magic bytes of the
 * image and PDF formats, so an image sent with the wrong media type (or garbage sent as an image) is refused
 * the way the vendors refuse it. Prompt-token costs of media are flat per item (see each vendor's prompt
 * module): the simulator never decodes pixels.
 */

/** Standard base64 with optional padding; compiled once, linear on large payloads. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:([^;,]+);base64,(.*)$/s;

/** The image formats OpenAI and Anthropic accept. */
export const WEB_IMAGE_TYPES: readonly string[] = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

/** The bytes of `data`, or undefined when it is not valid base64 (wrong alphabet, bad length or padding). */
export function decodeBase64(data: string): Buffer | undefined {
  if (data.length % 4 !== 0 || !BASE64.test(data)) return undefined;
  return Buffer.from(data, 'base64');
}

export interface DataUrl {
  mediaType: string;
  data: string;
}

/** `data:<type>;base64,<payload>`; other encodings and plain URLs give undefined. */
export function parseDataUrl(url: string): DataUrl | undefined {
  const match = DATA_URL.exec(url);
  if (match === null) return undefined;
  return { mediaType: (match[1] ?? '').toLowerCase(), data: match[2] ?? '' };
}

function startsWith(bytes: Buffer, prefix: readonly number[], offset = 0): boolean {
  if (bytes.length < offset + prefix.length) return false;
  return prefix.every((byte, index) => bytes[offset + index] === byte);
}

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG = [0xff, 0xd8, 0xff];
const GIF = [0x47, 0x49, 0x46, 0x38];
const RIFF = [0x52, 0x49, 0x46, 0x46];
const WEBP = [0x57, 0x45, 0x42, 0x50];
const PDF = [0x25, 0x50, 0x44, 0x46, 0x2d];

/** The image format the bytes really are, by their signature; undefined for anything else. */
export function sniffImageType(bytes: Buffer): string | undefined {
  if (startsWith(bytes, PNG)) return 'image/png';
  if (startsWith(bytes, JPEG)) return 'image/jpeg';
  if (startsWith(bytes, GIF)) return 'image/gif';
  if (startsWith(bytes, RIFF) && startsWith(bytes, WEBP, 8)) return 'image/webp';
  return undefined;
}

export function isPdf(bytes: Buffer): boolean {
  return startsWith(bytes, PDF);
}
