/** Command-line options of `npm run bench -- [options]`. */
import { parseArgs } from 'node:util';

export interface BenchOptions {
  /** Rounds per scenario; each round runs both targets once, in alternating order. */
  rounds: number;
  /** Length of one target's turn in a round. */
  durationMs: number;
  /** Warm-up per target and request kind, before anything is measured. */
  warmupMs: number;
  /** Words the simulator generates per reply (about one token, and one stream chunk, each). */
  replyWords: number;
  quick: boolean;
}

export const USAGE = `Usage: npm run bench -- [options]

  --quick             2 rounds of 750 ms per target and scenario (about 20 s in all), for a smoke run
  --rounds N          rounds per scenario (default 6; 2 with --quick)
  --duration-ms N     length of each target's turn in a round (default 2000; 750 with --quick)
  --warmup-ms N       warm-up per target and request kind (default 1000; 300 with --quick)
  --words N           words per simulated reply (default 60)
  -h, --help          this text

Default run: 3 scenarios x 6 rounds x 2 targets x 2 s = 72 s of load, under 2 minutes in all.
Results: printed, and written to bench/results/latest.json.
`;

export class OptionsError extends Error {}

/** Parses the arguments; returns undefined when help was asked for. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions | undefined {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: {
      quick: { type: 'boolean' },
      rounds: { type: 'string' },
      'duration-ms': { type: 'string' },
      'warmup-ms': { type: 'string' },
      words: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) return undefined;
  const quick = values.quick === true;
  return {
    quick,
    rounds: wholeNumber('rounds', values.rounds, 1) ?? (quick ? 2 : 6),
    durationMs: wholeNumber('duration-ms', values['duration-ms'], 50) ?? (quick ? 750 : 2000),
    warmupMs: wholeNumber('warmup-ms', values['warmup-ms'], 0) ?? (quick ? 300 : 1000),
    replyWords: wholeNumber('words', values.words, 1) ?? 60,
  };
}

function wholeNumber(name: string, raw: string | undefined, min: number): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new OptionsError(`--${name} must be a whole number of at least ${min}.`);
  return Number(raw);
}
