import type { MediaInput, VendorName } from '../canonical/request.js';

/**
 * What each vendor's adapter can pass on besides text and inline images. Anthropic reads PDFs inline or by URL;
 * OpenAI's chat completions read files only inline; Gemini takes any MIME type either way (its adapter sends the
 * type as it came); DeepSeek reads text only.
 */
const VENDOR_MEDIA_INPUT: Readonly<Record<VendorName, MediaInput>> = {
  anthropic: { imageUrls: true, inlinePdfs: true, pdfUrls: true, otherTypes: false },
  openai: { imageUrls: true, inlinePdfs: true, pdfUrls: false, otherTypes: false },
  gemini: { imageUrls: true, inlinePdfs: true, pdfUrls: true, otherTypes: true },
  deepseek: { imageUrls: false, inlinePdfs: false, pdfUrls: false, otherTypes: false },
};

export function vendorMediaInput(vendor: VendorName): MediaInput {
  return VENDOR_MEDIA_INPUT[vendor];
}
