import { describe, expect, it } from 'vitest';
import { csvLine } from './csv.js';

describe('csvLine', () => {
  it('quotes fields with commas, quotes and line breaks, and ends with CRLF', () => {
    expect(csvLine(['plain', 'a,b', 'say "hi"', 'two\nlines', 3, true])).toBe(
      'plain,"a,b","say ""hi""","two\nlines",3,true\r\n',
    );
  });

  it('defuses text a spreadsheet would run as a formula', () => {
    expect(csvLine(['=SUM(A1)', '+1', '-1', '@cmd', 'safe=ok'])).toBe("'=SUM(A1),'+1,'-1,'@cmd,safe=ok\r\n");
    expect(csvLine(['=HYPERLINK("x")'])).toBe(`"'=HYPERLINK(""x"")"\r\n`);
  });
});
