/**
 * The money side of storage. Amounts are bigint nano-USD; token counts and times are numbers.
 * Every change to a balance goes with a ledger entry in the same transaction, so the sum of an account's
 * ledger is its balance, always; `verifyLedger` proves it.
 */

/** `tier`: a tier bought (or renewed) from the balance (0008-tier-upgrades). */
export type LedgerKind = 'topup' | 'usage' | 'refund' | 'adjustment' | 'redemption' | 'tier';

export interface LedgerEntry {
  id: string;
  accountId: string;
  kind: LedgerKind;
  /** Signed: credits positive, charges negative. */
  amountNano: bigint;
  /** Unique: the same top-up, charge or redemption is never booked twice. */
  idempotencyKey: string;
  requestId: string | null;
  note: string | null;
  createdAt: number;
  /** The account's balance right after this entry. */
  balanceAfterNano: bigint;
  /** A usage line: reported tokens the settlement could not charge, and their cost (0 on every other kind). */
  unbilledTokens: number;
  unbilledNano: bigint;
  /** A usage line: the vendor-run tools its request used and their cost (part of the charge), from its usage record. */
  webSearchRequests: number;
  webFetchRequests: number;
  serverToolNano: bigint;
}

export interface AccountBalance {
  /** Settled money. */
  balanceNano: bigint;
  /** Held by requests in flight. */
  reservedNano: bigint;
  /** UTC day number (days since the epoch) the free counters belong to. */
  freeDay: number;
  freeUsedTokens: number;
  freeReservedTokens: number;
}

/** What the planner sees of the account at the moment of admission, under the wallet row's lock. */
export interface AdmissionState {
  /** What the request may hold: the account's available money, or the least any spend limit leaves when lower. */
  availableNano: bigint;
  freeTokensLeft: number;
  /** The tightest spend limit over the request (least left), as read under the wallet row's lock, when any. */
  spendLimit?: SpendLimitState;
}

/**
 * A spend limit at admission (docs/billing.md#spend-limits): a limit is money like the balance.
 */
export interface SpendLimitState {
  scope: import('./spend-limit-types.js').LimitScope;
  scopeId: string;
  limitNano: bigint;
  period: import('./key-permission-types.js').SpendPeriod;
  /** Settled spend of the current period. */
  spentNano: bigint;
  /** Held by requests in flight against it. */
  reservedNano: bigint;
  /** limit − spent − reserved, at least 0. */
  remainingNano: bigint;
  /** This limit's remainder, not the account's money, is what `availableNano` is. */
  binding: boolean;
}

export type AdmissionPlan =
  | {
      admitted: true;
      holdNano: bigint;
      freeTokens: number;
      /** The output the hold covers: its first slice. */
      maxOutputTokens: number;
      /** The account could also have paid for the request's whole output limit when it was admitted. */
      coversLimit?: boolean;
      /** The web searches held for, of those the request's tools allow (absent: it offers none). */
      webSearches?: number;
      /** What the hold becomes with fewer free tokens than planned (absent: the plan needs every one of them). */
      freeTokenPrices?: FreeTokenPrices;
    }
  | { admitted: false; reason: string };

/**
 * The prices of a plan's free tokens, for a store that plans from a read of the allowance that may be stale (the holds
 * in flight since took some): the free tokens the plan gave the output are given up first, each held at the output
 * price, then those it gave the prompt, at the input price. That is the hold the planner gives for the same output
 * with the free tokens that are left, since it spends them on the prompt first.
 */
export interface FreeTokenPrices {
  /** Of the plan's free tokens, those that cover output (the rest cover the prompt). */
  outputTokens: number;
  outputNano: bigint;
  inputNano: bigint;
}

export interface ReserveInput {
  requestId: string;
  /** The wallet's: the organisation of the request's key (a personal organisation has its person's account id). */
  accountId: string;
  apiKeyId: string;
  /** UTC day number of the request, for the free allowance. */
  day: number;
  freeAllowanceTokens: number;
  createdAt: number;
  /** When the sweeper may release the hold if the request never settles (a crash). */
  expiresAt: number;
  /** Pure: decides the hold from the account's state, which the repository reads under a lock. */
  plan(state: AdmissionState): AdmissionPlan;
  /**
   * The account's money as the caller last read it (with the key), if it has it: a repository that admits
   * optimistically may plan from it instead of reading again; the write still re-checks the row as it is.
   */
  accountHint?: import('./types.js').AccountMoneySnapshot;
}

export interface Reservation {
  requestId: string;
  accountId: string;
  holdNano: bigint;
  freeTokens: number;
  freeDay: number;
  /** The output tokens the hold covers so far: its first slice, then grown a slice at a time (`grantSlice`). */
  maxOutputTokens: number;
  /** The account could also have paid for the request's whole output limit when it was admitted. */
  coversLimit?: boolean;
  /** The web searches held for, of those the request's tools allow (absent: it offers none): the most it may run. */
  webSearches?: number;
  /** What the hold counts against the spend limits over it (0: none applies); grown with each slice. */
  limitHoldNano: bigint;
  /** The key the request came with: its slices count against the limits over it too. */
  apiKeyId?: string;
}

export type ReserveResult =
  | { admitted: true; reservation: Reservation }
  | { admitted: false; reason: string; state: AdmissionState };

/** What a settlement may take, as storage reads it under the wallet row's lock. */
export interface SettlementRoom {
  /** Free tokens the request may use: those its hold carries plus what is left of its day's allowance. */
  freeTokens: number;
  /** Each money limit's room (the balance, each spend limit's remainder): the charge fits every one. */
  moneyNano: readonly bigint[];
}

/** A reply's usage split into free, billed and unbilled (billing/usage-split.ts, the one rule for it). */
export interface SettlementSplit {
  freeTokens: number;
  /** The charge. */
  billedNano: bigint;
  /** Reported tokens no free allowance, balance or limit could cover. */
  unbilledTokens: number;
  /** Their cost at list price, and whatever part of a money-only charge could not be billed. */
  unbilledNano: bigint;
  /**
   * The billed tokens in the order free tokens cover them, each kind's count with its price. In a split that money
   * does not limit (every token past the free ones billed) that is what further free tokens would save, for a store
   * that learns only in its statement how many are left. Absent: not known.
   */
  billedInFreeOrder?: readonly BilledTokens[];
}

/** Billed tokens of one kind and the price of each. */
export interface BilledTokens {
  tokens: number;
  priceNano: bigint;
}

/** Splits a reply's usage within what the account, its allowance and its key's limit leave (pure). */
export type SettlementPricer = (room: SettlementRoom) => SettlementSplit;

export interface SettleInput {
  /** The usage row (its cost fields are filled by the repository from `price`). */
  usage: import('./types.js').UsageRecord;
  price: SettlementPricer;
  /** The daily free allowance: what is left of the request's day beyond its hold is free too. */
  freeAllowanceTokens: number;
  /**
   * The free tokens the request's hold was taken with, when the caller has its reservation: lets a repository
   * price the reply before it claims the hold (PostgreSQL's one-statement settlement). Only a hint: what the
   * stored hold says decides, and a repository may ignore it.
   */
  heldFreeTokens?: number;
}

export type SettleResult =
  | { settled: true; chargedNano: bigint; unbilledNano: bigint; unbilledTokens: number; freeTokensUsed: number }
  | { settled: false; reason: 'already_settled' };

export interface CreditInput {
  accountId: string;
  kind: Exclude<LedgerKind, 'usage'>;
  amountNano: bigint;
  idempotencyKey: string;
  note: string | null;
  at: number;
}

export type RedeemResult =
  | { redeemed: true; amountNano: bigint; balanceNano: bigint }
  | { redeemed: false; reason: 'unknown_code' | 'already_redeemed' | 'expired' };

export interface UsageSummaryRow {
  /** The group: a day (YYYY-MM-DD), a model id or an API key id. */
  group: string;
  requests: number;
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written for an hour. */
  cacheWrite1hTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  costNano: bigint;
  /** Reported tokens no free allowance, balance or key limit could pay, and their cost at list price. */
  unbilledTokens: number;
  unbilledNano: bigint;
}

/** What a request had delivered when its instance last wrote it: what a sweeper bills if the instance dies. */
export interface HoldCheckpoint {
  model: string;
  family: string;
  stream: boolean;
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** The part of `cacheWriteTokens` written for an hour. */
  cacheWrite1hTokens: number;
  outputTokens: number;
  at: number;
}

/** One live hold in an instance's periodic batch: its new expiry, and its checkpoint when it moved. */
export interface HoldRenewal {
  requestId: string;
  expiresAt: number;
  checkpoint?: HoldCheckpoint;
}

/** A hold whose request never settled (its instance died), as the sweeper claimed it. */
export interface OrphanedHold {
  requestId: string;
  accountId: string;
  apiKeyId: string;
  createdAt: number;
  /** Null: the request had delivered nothing when its instance last wrote a checkpoint. */
  checkpoint: HoldCheckpoint | null;
}

/** The settlement of an orphaned hold at its checkpoint (`instance_lost`), or undefined to release it free. */
export type OrphanBiller = (
  hold: OrphanedHold,
) => { usage: import('./types.js').UsageRecord; price: SettlementPricer; freeAllowanceTokens: number } | undefined;

/** What a sweep did: holds released free (nothing delivered) and holds settled at their checkpoint. */
export interface SweepResult {
  released: number;
  settled: number;
  /** What settled holds could not charge (their split's unbilled tokens and cost), per hold that left any. */
  unbilled: { model: string; tokens: number; nanoUsd: bigint }[];
}

/**
 * A request for one more slice of output on a live hold (docs/architecture.md#holds-that-grow): one atomic conditional
 * storage call.
 */
export interface SliceInput {
  requestId: string;
  accountId: string;
  /** The request's key (the reservation's, when absent): the limits over it bound the slice. */
  apiKeyId?: string;
  /** UTC day number now, for the free allowance. */
  day: number;
  /** Now (epoch ms), for the spend limits' periods; the start of `day` when absent. */
  at?: number;
  freeAllowanceTokens: number;
  /** Output tokens wanted (the slice, or less when the request's limit is near). */
  tokens: number;
  /** The output price: PostgreSQL's one-statement grant prices the whole slice with it in SQL. */
  outputPriceNano: bigint;
  /** Pure: decides the slice from the account's state, which the repository reads under a lock (billing/slice-grant.ts). */
  plan(state: AdmissionState): SlicePlan;
  /** The hold's new expiry (a grant is also a renewal)… */
  expiresAt: number;
  /** …and its checkpoint, written in the same statement. */
  checkpoint?: HoldCheckpoint;
}

export type SliceResult =
  | {
      granted: true;
      tokens: number;
      holdNano: bigint;
      freeTokens: number;
      /** Of holdNano, what counts against the spend limits over the request. */
      limitHoldNano?: bigint;
      /** The grant's checkpoint was not written (SQLite keeps holds in memory): the periodic batch writes it. */
      checkpointDeferred?: true;
    }
  | {
      granted: false;
      /**
       * `balance`: the account cannot pay one more token; `spend_limit`: a spend limit over it cannot (both end
       * the reply as a length stop); `gone`: the hold is no longer there (swept).
       */
      reason: 'balance' | 'spend_limit' | 'gone';
      state: AdmissionState;
    };

/** One more slice of output as the planner decides it: free tokens first, then money; less than asked, or none. */
export type SlicePlan =
  | { granted: true; tokens: number; holdNano: bigint; freeTokens: number }
  | { granted: false; reason: 'balance' | 'spend_limit' };

/** What an account has and holds, for refusals and GET /v1/account. */
export interface AccountHolds {
  balanceNano: bigint;
  reservedNano: bigint;
  /** Requests in flight holding money or free tokens. */
  holds: number;
  freeTokensLeft: number;
}

/**
 * The money hot path: admission, holds that grow, renewals and checkpoints, settlement and the sweeper's settlement of
 * orphaned holds. One implementation per database, each built by its storage's opener (sqlite/sqlite-billing-store.ts,
 * postgres/postgres-billing-store.ts); the money rules they apply are billing-rules.ts's and billing/'s pure functions.
 */
export interface BillingStore {
  /** Admission, atomically: the wallet row is locked, the plan decides, the hold is taken in one transaction. */
  reserve(input: ReserveInput): Promise<ReserveResult>;
  /**
   * Exactly once per request id, in one transaction: the usage row, the charge (never below a zero balance;
   * what could not be charged is recorded as unbilled), the ledger entry, the reservation released.
   * Works whether or not the reservation still exists (the sweeper may have released it).
   */
  settle(input: SettleInput): Promise<SettleResult>;
  /**
   * Moves a live request's hold expiry forward (never back), so the sweeper leaves a long stream's hold alone.
   * False when the hold is gone (settled, or already released).
   */
  extendHold(requestId: string, expiresAt: number): Promise<boolean>;
  /** Releases holds past their expiry; safe when several instances sweep at once. Returns how many. */
  releaseExpiredReservations(now: number, limit?: number): Promise<number>;
  /**
   * Claims holds past their expiry (safe when several instances sweep at once): one with a checkpoint is settled
   * at it, exactly once per request id, as `bill` prices it (input plus delivered output); one without is released.
   */
  sweepExpiredReservations(now: number, bill: OrphanBiller, limit?: number): Promise<SweepResult>;
  /**
   * The periodic batch of one instance: each live hold's expiry moved forward (never back) and, when given, its
   * checkpoint written. One storage call for all. Returns the request ids whose hold is gone (settled or swept).
   */
  renewHolds(renewals: readonly HoldRenewal[]): Promise<Set<string>>;
  /**
   * One more slice of output on a live hold, atomically: the account's money (and free tokens) conditionally
   * taken, the hold grown, its expiry and checkpoint written. Grants less than asked when only that is left.
   */
  grantSlice(input: SliceInput): Promise<SliceResult>;
}

/** What an opened store adds to the interface: writes still queued are committed, connections given back. */
export interface OwnedBillingStore extends BillingStore {
  close(): Promise<void>;
}

/**
 * Balances, credits, redemption codes and the ledger: not the per-request path (an operator's credit, a top-up, a
 * dashboard read), so they stay one Kysely repository for both databases (billing-ledger-repository.ts).
 */
export interface BillingLedgerRepository {
  balance(accountId: string): Promise<AccountBalance | null>;
  /** Credits (or, with a negative adjustment, debits down to zero at most) once per idempotency key. */
  credit(input: CreditInput): Promise<{ applied: boolean; balanceNano: bigint }>;
  /** The account's money, what is held and by how many requests (refusal texts, GET /v1/account). */
  holds(accountId: string, day: number, freeAllowanceTokens: number): Promise<AccountHolds | null>;
  /** `expiresAt` (epoch ms) null or absent: the codes never expire. */
  createRedemptionCodes(
    codes: ReadonlyArray<{ codeHash: string; amountNano: bigint }>,
    at: number,
    expiresAt?: number | null,
  ): Promise<void>;
  redeem(codeHash: string, accountId: string, at: number): Promise<RedeemResult>;
  ledger(accountId: string, limit: number, beforeId?: string): Promise<LedgerEntry[]>;
  /** Accounts whose balance differs from the sum of their ledger (empty when all is well). */
  verifyLedger(): Promise<Array<{ accountId: string; balanceNano: bigint; ledgerSumNano: bigint }>>;
  usageSummary(
    accountId: string,
    from: number,
    to: number,
    groupBy: 'day' | 'model' | 'key',
  ): Promise<UsageSummaryRow[]>;
}

/** Storage's `billing`: the database's store and the ledger repository, side by side (kysely-storage.ts). */
export interface BillingRepository extends BillingStore, BillingLedgerRepository {}
