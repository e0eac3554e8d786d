import { createInterface } from 'node:readline';
import { GatewayError } from '../canonical/errors.js';

/**
 * The password for `accounts create`, kept off the command line (where `npm run` echoes it and shells keep it in
 * history): asked for twice without echo on a terminal, or the first line of stdin when it is piped
 * (`printf '%s\n' "$PASSWORD" | tollgate accounts create …`).
 * Hand-written because the no-echo prompt is a few lines over Node's raw mode; no small maintained library
 * does only this.
 */
export async function readPassword(
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WriteStream = process.stderr,
): Promise<string> {
  if (!input.isTTY) return firstLine(input);
  const first = await hiddenPrompt('Password: ', input, output);
  const again = await hiddenPrompt('Password again: ', input, output);
  if (first !== again) throw new PasswordInputError('The two passwords differ.');
  return first;
}

/** Reported like any refused input: one line, exit code 1. */
class PasswordInputError extends GatewayError {
  constructor(message: string) {
    super('invalid_request', message, { param: 'password' });
  }
}

async function firstLine(input: NodeJS.ReadableStream): Promise<string> {
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  try {
    for await (const line of lines) return line;
  } finally {
    lines.close();
  }
  throw new PasswordInputError('No password on stdin: pipe one line, or run this in a terminal to be asked.');
}

function hiddenPrompt(question: string, input: NodeJS.ReadStream, output: NodeJS.WriteStream): Promise<string> {
  return new Promise((resolve, reject) => {
    output.write(question);
    let text = '';
    input.setRawMode(true);
    input.resume();
    input.setEncoding('utf8');
    const finish = (error?: Error) => {
      input.setRawMode(false);
      input.pause();
      input.removeListener('data', onData);
      output.write('\n');
      if (error === undefined) resolve(text);
      else reject(error);
    };
    const onData = (chunk: string) => {
      for (const character of chunk) {
        if (character === '\r' || character === '\n') return finish();
        if (character === '\u0003') return finish(new PasswordInputError('Cancelled.'));
        if (character === '\u007f' || character === '\b') text = text.slice(0, -1);
        else if (character >= ' ') text += character;
      }
    };
    input.on('data', onData);
  });
}
