/**
 * The PostgreSQL billing store's one-statement writes (postgres-billing-store.ts): each locks its wallet row first,
 * checks against the row as it is, and writes all or nothing. The money rules are billing-rules.ts's, written in SQL;
 * where a statement cannot decide by them it writes nothing and the store's locked path decides.
 */

export const READ_ACCOUNT_MONEY = `
  select cast(balance_nano as text) as balance, cast(reserved_nano as text) as reserved, free_day, free_used_tokens,
    free_reserved_tokens
  from organisations where id = $1`;

export const READ_HOLD = `select free_tokens from reservations where request_id = $1`;

/**
 * No spend limit of the organisation, at any level (docs/billing.md#spend-limits): the one-statement paths decide only
 * then; a request any limit may apply to goes to the locked path, which reads and holds against every one of them.
 */
export const NO_SPEND_LIMITS = `not exists (select 1 from spend_limits where organisation_id = $1)`;

/**
 * $1 account, $2 hold, $3 day, $4 free tokens, $5 daily allowance, $6 request, $7 key, $8 max output, $9 created,
 * $10 expires, $11 of the free tokens those covering output, $12/$13 the output and input token prices, $14 the
 * fewest free tokens the hold may take. The plan was made on a read that may be stale by the holds in flight since:
 * the hold takes the free tokens that are left, up to $4, and holds money for the ones it could not take, output's
 * first at $12, then the prompt's at $13 (FreeTokenPrices in billing-types.ts), as long as the balance pays for that.
 * `acct` locks the wallet row first and is read by the update, so it is materialised: run once, before it.
 * Returns the hold and the free tokens taken.
 */
export const TAKE_HOLD = `
  with acct as materialized (
    select id, balance_nano - reserved_nano as available,
      least($4::bigint, greatest(0, $5::bigint
        - case when free_day = $3 then free_used_tokens + free_reserved_tokens else 0 end)) as free
    from organisations where id = $1 for no key update
  ),
  plan as materialized (
    select id, available, free,
      $2::bigint + least($4::bigint - free, $11::bigint) * $12::bigint
        + greatest(0, $4::bigint - free - $11::bigint) * $13::bigint as hold
    from acct
  ),
  held as (
    update organisations o set
      reserved_nano = o.reserved_nano + p.hold,
      free_used_tokens = case when o.free_day = $3 then o.free_used_tokens else 0 end,
      free_reserved_tokens = case when o.free_day = $3 then o.free_reserved_tokens + p.free else p.free end,
      free_day = $3
    from plan p
    where o.id = p.id and p.available >= p.hold and p.free >= $14::bigint and ${NO_SPEND_LIMITS}
    returning o.id, p.hold, p.free
  )
  insert into reservations (request_id, account_id, api_key_id, hold_nano, free_tokens, free_day, max_output_tokens, created_at, expires_at)
  select $6, id, $7, hold, free, $3, $8, $9, $10 from held
  returning cast(hold_nano as text) as hold, free_tokens`;

/**
 * $1 account, $2 request, $3 free tokens the hold was taken with, $4 the charge and $5 the free tokens of the split with
 * them (money no limit), $6 the usage has more tokens than those free tokens and $31/$32 do not say which, $7…$19 the
 * usage row, $20 ledger id, $21 ledger time, $22 UTC day, $23 the usage row's route, $24 unbilled tokens (the vendor's
 * overrun), $25 1-hour cache writes, $26 the daily free allowance, $27/$28/$29 web searches, web fetches and their
 * cost, $30 the local count of the prompt (calibration samples), $31/$32 the split's billed tokens per kind in the
 * order free tokens cover them, and their prices (SettlementSplit.billedInFreeOrder; empty when not known).
 * The rule's room is the hold's free tokens plus what is left of the hold's day's allowance (billing-rules.ts's
 * settlementRoom): `room` reads what is left on the locked row, and `extra` gives that many more free tokens to the
 * billed ones in order, taking their price off the charge. `ok` says whether the statement may decide: the hold is
 * there with those free tokens, the charge fits the balance, no spend limit of the organisation applies and the hold
 * counts against none, and, when $31 does not say which tokens more free ones would cover, none are left. If not,
 * nothing is written and the locked transaction splits the usage (the same rule) and settles the limits.
 * Every CTE reaches `acct` before it writes, so the wallet row is locked first, as in every other write
 * transaction (no deadlock with the sweeper, which also locks the account before claiming a hold).
 */
export const SETTLE = `
  with acct as (
    select balance_nano, free_day, free_used_tokens, free_reserved_tokens from organisations where id = $1 for no key update
  ),
  room as (
    select case when r.free_day = a.free_day
        then greatest(0, $26::bigint - a.free_used_tokens - a.free_reserved_tokens) else 0 end as free_left
    from reservations r, acct a
    where r.request_id = $2 and r.free_tokens = $3::bigint
  ),
  billed as (
    select tokens, price, (sum(tokens) over (order by position))::bigint - tokens as before
    from unnest($31::bigint[], $32::bigint[]) with ordinality as kind(tokens, price, position)
  ),
  extra as (
    select least(m.free_left, coalesce((select sum(tokens) from billed), 0)::bigint) as tokens from room m
  ),
  saved as (
    select e.tokens, coalesce(sum(b.price * least(b.tokens, greatest(0, e.tokens - b.before))), 0)::bigint as nano
    from extra e left join billed b on true group by e.tokens
  ),
  ok as (
    select exists (
      select 1 from room m, saved s, acct a
      where $4::bigint - s.nano <= a.balance_nano and (not $6::boolean or m.free_left = 0)
    ) and ${NO_SPEND_LIMITS} and not exists (select 1 from spend_limit_holds where request_id = $2) as consistent
  ),
  claimed as (
    delete from reservations where request_id = $2 and (select consistent from ok)
    returning hold_nano, free_tokens, free_day
  ),
  final as (
    select c.hold_nano as hold,
      case when c.free_day = a.free_day then c.free_tokens else 0 end as held_free,
      $5::bigint + s.tokens as free_used,
      case when c.free_day = a.free_day then $5::bigint + s.tokens else 0 end as free_used_today,
      $4::bigint - s.nano as charged, 0::bigint as unbilled
    from claimed c, acct a, saved s
  ),
  inserted as (
    insert into usage_records (request_id, account_id, api_key_id, model, family, input_tokens, cache_read_tokens,
      cache_write_tokens, output_tokens, reasoning_tokens, status, stream, latency_ms, created_at, raw_usage, cost_nano,
      free_tokens, unbilled_nano, route, unbilled_tokens, cache_write_1h_tokens, web_search_requests, web_fetch_requests,
      server_tool_nano, local_input_tokens)
    select $2, $1, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, f.charged, f.free_used, f.unbilled, $23, $24,
      $25, $27, $28, $29::bigint, $30::integer
    from final f where (select consistent from ok)
    on conflict (request_id) do nothing
    returning request_id
  ),
  updated as (
    update organisations a set
      balance_nano = a.balance_nano - f.charged,
      reserved_nano = a.reserved_nano - f.hold,
      free_reserved_tokens = a.free_reserved_tokens - f.held_free,
      free_used_tokens = a.free_used_tokens + f.free_used_today
    from final f
    where a.id = $1 and exists (select 1 from inserted)
    returning a.balance_nano
  ),
  ledger as (
    insert into ledger_entries (id, account_id, kind, amount_nano, balance_after_nano, idempotency_key, request_id, note, created_at)
    select $20, $1, 'usage', -f.charged, u.balance_nano, 'usage:' || $2, $2, $8, $21
    from final f, updated u where f.charged > 0
    on conflict (idempotency_key) do nothing
    returning id
  ),
  daily as (
    insert into usage_daily (account_id, day, model, api_key_id, requests, input_tokens, cache_read_tokens,
      cache_write_tokens, cache_write_1h_tokens, output_tokens, reasoning_tokens, cost_nano, unbilled_tokens, unbilled_nano)
    select $1, $22, $8, $7, 1, $10, $11, $12, $25, $13, $14, f.charged, $24, f.unbilled
    from final f where exists (select 1 from inserted)
    on conflict (account_id, day, model, api_key_id) do update set
      requests = usage_daily.requests + 1,
      input_tokens = usage_daily.input_tokens + excluded.input_tokens,
      cache_read_tokens = usage_daily.cache_read_tokens + excluded.cache_read_tokens,
      cache_write_tokens = usage_daily.cache_write_tokens + excluded.cache_write_tokens,
      cache_write_1h_tokens = usage_daily.cache_write_1h_tokens + excluded.cache_write_1h_tokens,
      output_tokens = usage_daily.output_tokens + excluded.output_tokens,
      reasoning_tokens = usage_daily.reasoning_tokens + excluded.reasoning_tokens,
      cost_nano = usage_daily.cost_nano + excluded.cost_nano,
      unbilled_tokens = usage_daily.unbilled_tokens + excluded.unbilled_tokens,
      unbilled_nano = usage_daily.unbilled_nano + excluded.unbilled_nano
    returning day
  )
  select (select consistent from ok) as consistent, (select count(*) from inserted) as inserted,
    cast(f.charged as text) as charged, cast(f.unbilled as text) as unbilled, f.free_used
  from final f`;
