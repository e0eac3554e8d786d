import type { Logger } from 'pino';
import type { SettleResult } from '../storage/billing-types.js';
import type { BillingService, ReplayReport } from './billing-service.js';
import type { JournalEntry } from './settlement-journal-entry.js';
import type { SettlementJournal } from './settlement-journal.js';

export interface JournalReplayOptions {
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** How often pending entries are tried while the store is down: the delay between its return and the replay. */
  intervalMs?: number;
  /** How often the directory is scanned for the journals of instances that are gone. */
  adoptEveryMs?: number;
  /** Told of each replayed settlement that the store took (metrics count it as settled then). */
  onSettled?: (entry: JournalEntry, result: SettleResult) => void;
}

export interface JournalReplay {
  /** One pass now (adopting first): start-up runs it before the gateway listens. */
  runNow(): Promise<ReplayReport>;
  /** Stops the timers and waits for a running pass. */
  stop(): Promise<void>;
}

/**
 * Replays the settlement journal: a pass every `intervalMs` while entries are pending, on disk or unwritten (one cheap attempt that
 * fails at once while the store is down, so the replay follows its return within a second or so), and a scan
 * for orphaned journals (of instances that stopped or crashed) every `adoptEveryMs`. Safe on every instance.
 */
export function startJournalReplay(
  billing: BillingService,
  journal: SettlementJournal,
  options: JournalReplayOptions,
): JournalReplay {
  const intervalMs = options.intervalMs ?? 1_000;
  const adoptEveryMs = options.adoptEveryMs ?? 30_000;
  const { logger } = options;
  /** Entries whose non-outage failure was logged already: one line per entry, not one per pass. */
  const reported = new Set<string>();
  let running: Promise<ReplayReport> | undefined;
  let lastAdoption = 0;

  async function pass(): Promise<ReplayReport> {
    if (Date.now() - lastAdoption >= adoptEveryMs) {
      lastAdoption = Date.now();
      const adopted = await journal.adopt();
      if (adopted > 0)
        logger.warn(
          { entries: adopted, directory: journal.directory },
          'adopted the settlement journal of an instance that is gone',
        );
    }
    const report = await billing.replayJournal(options.onSettled);
    if (report.settled + report.alreadySettled > 0) {
      logger.info(
        { settled: report.settled, alreadySettled: report.alreadySettled, remaining: report.remaining },
        'replayed journaled settlements',
      );
    }
    for (const { requestId, error } of report.failed) {
      if (reported.has(requestId)) continue;
      reported.add(requestId);
      logger.error(
        { err: error, requestId },
        'a journaled settlement was refused by the store; kept in the journal and tried again',
      );
    }
    return report;
  }

  function run(): Promise<ReplayReport> {
    running ??= pass().finally(() => {
      running = undefined;
    });
    return running;
  }

  const timer = setInterval(() => {
    if (running !== undefined) return;
    const waiting = journal.stats();
    if (waiting.pending + waiting.unwritten === 0 && Date.now() - lastAdoption < adoptEveryMs) return;
    run().catch((error: unknown) => logger.error({ err: error }, 'settlement journal replay failed'));
  }, intervalMs);
  timer.unref();

  return {
    runNow: run,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}
