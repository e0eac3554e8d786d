/**
 * `text` as one flat string of its own. A text grown delta by delta is a rope whose leaves are often slices of
 * larger strings (a delta read by its learned shape is a slice of the whole SSE chunk's text), and a slice keeps
 * the string it was cut from: a held stream's rope keeps every chunk it was sent. Slicing a rope flattens it into a
 * new string that the slice alone keeps, so the rope and those larger strings can be collected. (An unused
 * `Number(text)` flattens in place, but the optimising compiler may drop it.) Costs the text's length: call it once
 * in a while, never per delta.
 */
export function flatCopy(text: string): string {
  return text.length < 2 ? text : `${text} `.slice(0, -1);
}
