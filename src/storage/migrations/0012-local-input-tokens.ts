import type { Kysely } from 'kysely';

/**
 * The gateway's own (tokenizer) count of a request's prompt, on the usage records of requests that teach the
 * calibration of prompt estimates (docs/billing.md#calibrated-prompt-estimates): the vendor reported the usage itself
 * and admission had counted the prompt. Beside the vendor's prompt tokens on the same row it is one sample of the
 * vendor-to-local ratio, which a starting gateway reads back from the latest rows. Null on every other row and on
 * rows written before it. One definition for both dialects, like 0001.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('usage_records').addColumn('local_input_tokens', 'integer').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('usage_records').dropColumn('local_input_tokens').execute();
}
