import { destination as pinoDestination, type DestinationStream } from 'pino';

/**
 * Standard output and error as the gateway writes them (the banner, shutdown notes): a write that fails, typically
 * EPIPE when whatever read the pipe (a log shipper, `| head`, a closed terminal) has gone, is dropped. Without a
 * listener Node raises the stream's 'error' as an uncaught exception, so a SIGTERM after the log reader went away
 * crashed the gateway with `write EPIPE` instead of draining. Nothing is lost that anyone could still read.
 */
export function tolerateClosedStandardOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    if (!stream.listeners('error').includes(dropOutputError)) stream.on('error', dropOutputError);
  }
}

function dropOutputError(): void {}

/**
 * The log destination: standard output through pino's own destination, which already drops every write after an
 * EPIPE; any other write error (EIO on a closed terminal, …) is dropped here too instead of ending the process.
 */
export function failSafeLogDestination(): DestinationStream {
  const destination = pinoDestination({ dest: 1 });
  destination.on('error', dropOutputError);
  return destination;
}
