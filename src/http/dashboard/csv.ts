/**
 * One CSV line (RFC 4180), hand-written because it is ten lines: fields with a comma, quote or line break are
 * quoted. Text a spreadsheet would run as a formula (=, +, -, @, tab, CR at the start) gets a leading
 * apostrophe: key names are user input, and an export must not carry a formula into the owner's spreadsheet.
 */
export function csvLine(fields: ReadonlyArray<string | number | boolean>): string {
  return `${fields.map(csvField).join(',')}\r\n`;
}

function csvField(value: string | number | boolean): string {
  if (typeof value !== 'string') return String(value);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
