import { NO_SPEND_LIMITS } from './postgres-billing-statements.js';

/**
 * PostgreSQL's statements for holds that grow while their request runs (docs/architecture.md#holds-that-grow), used by
 * PostgresBillingStore: a slice of output in one statement (for an organisation without spend limits), and the
 * periodic batch of renewals and checkpoints. Split out of postgres-billing-store.ts to keep that file to its calls.
 */

/**
 * What a granted slice sets on its hold besides the money, in both GRANT_SLICE statements: $4 the slice's tokens, $7
 * the new expiry, $8…$16 the checkpoint (null: none with this grant).
 */
const GROWN_HOLD_COLUMNS = `max_output_tokens = r.max_output_tokens + $4::bigint,
      expires_at = greatest(r.expires_at, $7::bigint),
      model = coalesce($8::text, r.model),
      family = coalesce($9::text, r.family),
      stream = coalesce($10::int, r.stream),
      checkpoint_input_tokens = coalesce($11::bigint, r.checkpoint_input_tokens),
      checkpoint_cache_read_tokens = coalesce($12::bigint, r.checkpoint_cache_read_tokens),
      checkpoint_cache_write_tokens = coalesce($13::bigint, r.checkpoint_cache_write_tokens),
      checkpoint_output_tokens = coalesce($14::bigint, r.checkpoint_output_tokens),
      checkpoint_at = coalesce($15::bigint, r.checkpoint_at),
      checkpoint_cache_write_1h_tokens = coalesce($16::bigint, r.checkpoint_cache_write_1h_tokens)`;

/**
 * $1 account, $2 request, $3 UTC day, $4 tokens, $5 daily allowance, $6 output price, $7 expiry, $8…$16 checkpoint.
 * `acct` locks the wallet row first (as every write of the account does, so no deadlock with settlement or the
 * sweeper), and is referenced by both writes, so it is materialised: run once, before either. The hold grows only
 * when the locked row can pay for the whole slice and no spend limit of the organisation applies (`grown`'s condition:
 * with a limit the locked path grants the slice within every one); the account's reserved money then grows by the same
 * amount (`taken`). A hold deleted meanwhile
 * (settled, swept) grows nothing, so nothing is taken.
 */
export const GRANT_SLICE = `
  with acct as materialized (
    select id, balance_nano, reserved_nano, free_day, free_used_tokens, free_reserved_tokens
    from organisations where id = $1 for no key update
  ),
  plan as materialized (
    select r.request_id,
      case when a.free_day = $3 and r.free_day = $3
        then least($4::bigint, greatest(0, $5::bigint - a.free_used_tokens - a.free_reserved_tokens)) else 0 end as free
    from reservations r, acct a where r.request_id = $2
  ),
  grown as (
    update reservations r set
      hold_nano = r.hold_nano + ($4::bigint - p.free) * $6::bigint,
      free_tokens = r.free_tokens + p.free,
      ${GROWN_HOLD_COLUMNS}
    from plan p, acct a
    where r.request_id = p.request_id and a.balance_nano - a.reserved_nano >= ($4::bigint - p.free) * $6::bigint
      and ${NO_SPEND_LIMITS}
    returning p.free
  ),
  taken as (
    update organisations a set
      reserved_nano = a.reserved_nano + ($4::bigint - g.free) * $6::bigint,
      free_reserved_tokens = a.free_reserved_tokens + g.free
    from grown g where a.id = $1
    returning g.free
  )
  select cast(free as text) as free from taken`;

/** $1 request ids, $2 expiries, $3…$11 the checkpoint columns (null: no checkpoint for that hold). */
export const RENEW_HOLDS = `
  update reservations r set
    expires_at = greatest(r.expires_at, v.expires_at),
    model = coalesce(v.model, r.model),
    family = coalesce(v.family, r.family),
    stream = coalesce(v.stream, r.stream),
    checkpoint_input_tokens = coalesce(v.input_tokens, r.checkpoint_input_tokens),
    checkpoint_cache_read_tokens = coalesce(v.cache_read_tokens, r.checkpoint_cache_read_tokens),
    checkpoint_cache_write_tokens = coalesce(v.cache_write_tokens, r.checkpoint_cache_write_tokens),
    checkpoint_output_tokens = coalesce(v.output_tokens, r.checkpoint_output_tokens),
    checkpoint_at = coalesce(v.checkpoint_at, r.checkpoint_at),
    checkpoint_cache_write_1h_tokens = coalesce(v.cache_write_1h_tokens, r.checkpoint_cache_write_1h_tokens)
  from unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::int[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[])
    as v(request_id, expires_at, model, family, stream, input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, checkpoint_at, cache_write_1h_tokens)
  where r.request_id = v.request_id
  returning r.request_id`;
