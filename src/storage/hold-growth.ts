import { sql, type Kysely } from 'kysely';
import { planSlice, type LockedAccount } from './billing-rules.js';
import type { BillingRepository, HoldCheckpoint, SliceResult } from './billing-types.js';
import type { Database } from './database-schema.js';
import { readKeySpend, takeKeyHold } from './key-spend-statements.js';
import { amount } from './money-sql.js';
import { writeTransaction, type Executor } from './transactions.js';
import type { Storage } from './types.js';

/**
 * Holds that grow while their request runs (docs/architecture.md#holds-that-grow), on the Kysely path of both dialects
 * (SQLite's and PostgreSQL's hot paths replace these with their own statements): the periodic batch that renews holds
 * and writes their checkpoints, and a slice of output granted within the account's money and, for a key with a spend
 * limit (docs/architecture.md#key-scopes-and-limits), the key's remaining limit, in one transaction that locks the
 * account first.
 */
export function createHoldGrowth(
  db: Kysely<Database>,
  dialect: Storage['dialect'],
  lockAccount: (trx: Executor, accountId: string) => Promise<LockedAccount | null>,
): Pick<BillingRepository, 'renewHolds' | 'grantSlice'> {
  return {
    async renewHolds(renewals) {
      const gone = new Set<string>();
      if (renewals.length === 0) return gone;
      // One transaction for the batch: one commit (one WAL flush) for every live hold of the instance.
      await writeTransaction(db, dialect, async (trx) => {
        for (const renewal of renewals) {
          const checkpoint = renewal.checkpoint === undefined ? {} : checkpointColumns(renewal.checkpoint);
          const result = await trx
            .updateTable('reservations')
            .set({
              expires_at: sql`case when expires_at < ${renewal.expiresAt} then ${renewal.expiresAt} else expires_at end`,
              ...checkpoint,
            })
            .where('request_id', '=', renewal.requestId)
            .executeTakeFirst();
          if (result.numUpdatedRows === 0n) gone.add(renewal.requestId);
        }
      });
      return gone;
    },

    async grantSlice(input) {
      return writeTransaction(db, dialect, async (trx): Promise<SliceResult> => {
        const account = await lockAccount(trx, input.accountId);
        if (account === null) throw new Error(`No account ${input.accountId}.`);
        const hold = await trx
          .selectFrom('reservations')
          .select(['free_day', 'api_key_id'])
          .where('request_id', '=', input.requestId)
          .executeTakeFirst();
        // The key's row after the account's (lock order), as at admission: the slice is planned within its limit too.
        const keyId = input.apiKeyId ?? hold?.api_key_id;
        const key = input.keySpendLimited === true && keyId !== undefined ? await readKeySpend(trx, keyId) : null;
        const { state, plan } = planSlice(account, input, hold === undefined ? -1 : Number(hold.free_day), key);
        if (hold === undefined) return { granted: false, reason: 'gone', state };
        if (!plan.granted) return { granted: false, reason: plan.reason, state };
        if (
          plan.key !== undefined &&
          plan.key.holdNano > 0n &&
          !(await takeKeyHold(trx, hold.api_key_id, plan.key.holdNano, plan.key.period))
        ) {
          // Thrown, so the transaction rolls back whole: the account's part of the slice is not taken either.
          throw new Error("The key changed under its account's lock.");
        }
        const keyHoldNano = plan.key?.holdNano ?? 0n;
        const taken = await trx
          .updateTable('accounts')
          .set({
            reserved_nano: sql`reserved_nano + ${amount(plan.holdNano)}`,
            free_reserved_tokens: sql`free_reserved_tokens + ${plan.freeTokens}`,
          })
          .where('id', '=', input.accountId)
          // Belt and braces, as at admission: the conditional update refuses an overdraft even if the lock were
          // ever bypassed. A key's remaining spend limit is the condition of the key's statement above.
          .where(sql`balance_nano - reserved_nano`, '>=', amount(plan.holdNano))
          .executeTakeFirst();
        if (taken.numUpdatedRows !== 1n) throw new Error('The account changed under its lock.');
        await trx
          .updateTable('reservations')
          .set({
            hold_nano: sql`hold_nano + ${amount(plan.holdNano)}`,
            free_tokens: sql`free_tokens + ${plan.freeTokens}`,
            max_output_tokens: sql`max_output_tokens + ${plan.tokens}`,
            expires_at: sql`case when expires_at < ${input.expiresAt} then ${input.expiresAt} else expires_at end`,
            ...(keyHoldNano === 0n ? {} : { key_hold_nano: sql`key_hold_nano + ${amount(keyHoldNano)}` }),
            ...(input.checkpoint === undefined ? {} : checkpointColumns(input.checkpoint)),
          })
          .where('request_id', '=', input.requestId)
          .execute();
        return {
          granted: true,
          tokens: plan.tokens,
          holdNano: plan.holdNano,
          freeTokens: plan.freeTokens,
          ...(keyHoldNano === 0n ? {} : { keyHoldNano }),
        };
      });
    },
  };
}

/** A checkpoint as the reservation's columns. */
function checkpointColumns(checkpoint: HoldCheckpoint) {
  return {
    model: checkpoint.model,
    family: checkpoint.family,
    stream: checkpoint.stream ? 1 : 0,
    checkpoint_input_tokens: checkpoint.inputTokens,
    checkpoint_cache_read_tokens: checkpoint.cacheReadTokens,
    checkpoint_cache_write_tokens: checkpoint.cacheWriteTokens,
    checkpoint_cache_write_1h_tokens: checkpoint.cacheWrite1hTokens,
    checkpoint_output_tokens: checkpoint.outputTokens,
    checkpoint_at: checkpoint.at,
  };
}
