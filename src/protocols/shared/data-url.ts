import { invalidRequest } from '../../canonical/errors.js';
import type { ImageSource } from '../../canonical/request.js';

const DATA_URL = /^data:([a-z]+\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)$/i;

/** An image URL as the canonical source: `data:<mime>;base64,<payload>` or an http(s) URL; anything else is a 400. */
export function imageSourceFromUrl(url: string, param: string): ImageSource {
  if (url.startsWith('data:')) {
    const match = DATA_URL.exec(url);
    if (match === null || match[2]!.length === 0) {
      throw invalidRequest(`Invalid image data URL in '${param}': expected data:<media type>;base64,<data>.`, param);
    }
    return { kind: 'base64', mediaType: match[1]!.toLowerCase(), data: match[2]!.replace(/\s+/g, '') };
  }
  if (/^https?:\/\//i.test(url)) return { kind: 'url', url };
  throw invalidRequest(`Invalid image URL in '${param}': expected an http(s) URL or a base64 data URL.`, param);
}

/**
 * An OpenAI file part's `file_data` (chat completions' `file`, the Responses API's `input_file`) as the canonical
 * source: a data URL as it is, or bare base64 whose media type the filename's extension tells (a PDF otherwise,
 * the only type every vendor reads).
 */
export function documentSourceFromFileData(
  fileData: string,
  filename: string | null | undefined,
  param: string,
): ImageSource {
  if (fileData.startsWith('data:')) return imageSourceFromUrl(fileData, param);
  const extension = filename?.split('.').pop()?.toLowerCase();
  const mediaType = extension === 'txt' || extension === 'md' ? 'text/plain' : 'application/pdf';
  return imageSourceFromUrl(`data:${mediaType};base64,${fileData}`, param);
}
