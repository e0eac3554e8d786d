import { describe, expect, it } from 'vitest';
import type { CanonicalRequest } from '../canonical/request.js';
import { emptyUsage } from '../canonical/usage.js';
import { MODEL_DEFINITIONS } from '../catalog/models.js';
import { ModelCatalog } from '../catalog/model-catalog.js';
import { inputPrice, planAdmission } from './admission.js';
import { carriesOneHourBreakpoint } from './cache-lifetime.js';
import { costOfUsage, pricesFromPerMillion } from './prices.js';
import { priceSettlement } from '../../test/helpers/settlement-pricers.js';

const catalog = new ModelCatalog();
const sonnet = catalog.resolve('alpha-sonnet-5').prices;

/** 10,000 read + 2,000 5-minute writes + 1,000 1-hour writes + 500 uncached + 300 output. */
const CACHED_TURN = {
  ...emptyUsage(),
  inputTokens: 500,
  cacheReadTokens: 10_000,
  cacheWriteTokens: 3_000,
  cacheWrite1hTokens: 1_000,
  outputTokens: 300,
};

describe('cache prices', () => {
  it('prices alpha reads at 0.1x, 5-minute writes at 1.25x and 1-hour writes at 2x input', () => {
    for (const definition of MODEL_DEFINITIONS.filter((model) => model.family === 'alpha')) {
      const prices = catalog.resolve(definition.id).prices;
      expect(prices.cacheRead * 10n).toBe(prices.input);
      expect(prices.cacheWrite * 4n).toBe(prices.input * 5n);
      expect(prices.cacheWrite1h).toBe(prices.input * 2n);
    }
    // $3/M in: 3,000 nano a token; read $0.30/M, 5-minute write $3.75/M, 1-hour write $6/M.
    expect(sonnet).toEqual({
      input: 3_000n,
      output: 15_000n,
      cacheRead: 300n,
      cacheWrite: 3_750n,
      cacheWrite1h: 6_000n,
      // Per use: a web search $10 per 1,000; a web fetch costs only its tokens.
      webSearchRequest: 10_000_000n,
      webFetchRequest: 0n,
    });
  });

  it('bills the other families with no write premium: writes of either lifetime as input', () => {
    for (const definition of MODEL_DEFINITIONS.filter((model) => model.family !== 'alpha')) {
      const prices = catalog.resolve(definition.id).prices;
      expect(prices.cacheWrite).toBe(prices.input);
      expect(prices.cacheWrite1h).toBe(prices.input);
      expect(prices.cacheRead < prices.input).toBe(true);
    }
    // Published cached-input prices: beta-5.4 10%, o3 25%, gamma-2.5-pro 25%, gamma-3.5-flash 10%, delta-v4-flash 10%.
    expect(catalog.resolve('beta-5.4').prices.cacheRead).toBe(250n);
    expect(catalog.resolve('o3').prices.cacheRead).toBe(500n);
    expect(catalog.resolve('gamma-2.5-pro').prices.cacheRead).toBe(250n);
    expect(catalog.resolve('gamma-3.5-flash').prices.cacheRead).toBe(30n);
    expect(catalog.resolve('delta-v4-flash').prices.cacheRead).toBe(14n);
  });

  it('takes a 1-hour write price from an override, or the 5-minute price without one', () => {
    const overridden = new ModelCatalog({ 'alpha-sonnet-5': { prices: { cacheWrite1h: '7.5' } } });
    expect(overridden.resolve('alpha-sonnet-5').prices).toMatchObject({ cacheWrite: 3_750n, cacheWrite1h: 7_500n });
    expect(pricesFromPerMillion({ input: '2', output: '4', cacheWrite: '2.5' }).cacheWrite1h).toBe(2_500n);
  });

  it('costs each kind of prompt token at its own price, to the nano-dollar', () => {
    // 10,000 × 300 + 2,000 × 3,750 + 1,000 × 6,000 + 500 × 3,000 + 300 × 15,000
    // = 3,000,000 + 7,500,000 + 6,000,000 + 1,500,000 + 4,500,000 = 22,500,000 nano-USD ($0.0225).
    expect(costOfUsage(CACHED_TURN, sonnet)).toBe(22_500_000n);
    expect(priceSettlement(CACHED_TURN, sonnet, 0)).toEqual({ chargeNano: 22_500_000n, freeTokensUsed: 0 });
    // All writes for 5 minutes: the 1,000 1-hour writes at 3,750 instead of 6,000, 2,250,000 less.
    expect(costOfUsage({ ...CACHED_TURN, cacheWrite1hTokens: 0 }, sonnet)).toBe(20_250_000n);
  });

  it('applies free tokens to uncached input, reads, 5-minute writes, then 1-hour writes, then output', () => {
    // 500 + 10,000 + 2,000 free: left 1,000 1-hour writes and 300 output = 6,000,000 + 4,500,000.
    expect(priceSettlement(CACHED_TURN, sonnet, 12_500)).toEqual({ chargeNano: 10_500_000n, freeTokensUsed: 12_500 });
    // 500 of the 1-hour writes free too: 500 × 6,000 + 4,500,000.
    expect(priceSettlement(CACHED_TURN, sonnet, 13_000)).toEqual({ chargeNano: 7_500_000n, freeTokensUsed: 13_000 });
  });
});

describe('the hold with cache writes', () => {
  const request = (oneHourCacheWrites: boolean) => ({
    inputTokens: 13_500,
    clientMaxOutputTokens: 300,
    modelMaxOutputTokens: 64_000,
    firstSliceTokens: 2_048,
    prices: sonnet,
    oneHourCacheWrites,
  });

  it('prices every prompt token at the 1-hour write price when the request asks for a 1-hour cache', () => {
    expect(inputPrice(request(true))).toBe(6_000n);
    expect(inputPrice(request(false))).toBe(3_750n);
    // 13,500 × 6,000 + 300 × 15,000 = 81,000,000 + 4,500,000.
    expect(planAdmission(request(true), { availableNano: 10n ** 12n, freeTokensLeft: 0 })).toMatchObject({
      admitted: true,
      holdNano: 85_500_000n,
    });
    // 13,500 × 3,750 + 4,500,000 without one.
    expect(planAdmission(request(false), { availableNano: 10n ** 12n, freeTokensLeft: 0 })).toMatchObject({
      holdNano: 55_125_000n,
    });
  });

  it('never holds less than the charge, whatever mix of the prompt the vendor reports cached', () => {
    const plan = planAdmission(request(true), { availableNano: 85_500_000n, freeTokensLeft: 0 });
    expect(plan.admitted).toBe(true);
    const mixes = [
      CACHED_TURN,
      { ...CACHED_TURN, inputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 13_500, cacheWrite1hTokens: 13_500 },
      { ...CACHED_TURN, inputTokens: 13_500, cacheReadTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 },
    ];
    for (const usage of mixes) {
      expect(plan.admitted && priceSettlement(usage, sonnet, 0).chargeNano <= plan.holdNano).toBe(true);
    }
    // One nano-dollar less than the 1-hour hold is refused: the 5-minute hold would not cover an all-1h prompt.
    expect(planAdmission(request(true), { availableNano: 81_000_000n, freeTokensLeft: 0 }).admitted).toBe(false);
  });

  it('finds a 1-hour breakpoint on the system, a message block, a tool, or the request', () => {
    const base: CanonicalRequest = {
      model: 'alpha-sonnet-5',
      system: [{ type: 'text', text: 'system' }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
      tools: [{ name: 'read' }],
      sampling: {},
      stream: false,
      extensions: {},
      extensionsProtocol: 'anthropic-messages',
    };
    const hour = { ttl: '1h' } as const;
    expect(carriesOneHourBreakpoint(base)).toBe(false);
    expect(carriesOneHourBreakpoint({ ...base, cache: { ttl: '5m' } })).toBe(false);
    expect(carriesOneHourBreakpoint({ ...base, cache: hour })).toBe(true);
    expect(carriesOneHourBreakpoint({ ...base, system: [{ type: 'text', text: 's', cache: hour }] })).toBe(true);
    expect(carriesOneHourBreakpoint({ ...base, tools: [{ name: 'read', cache: hour }] })).toBe(true);
    expect(
      carriesOneHourBreakpoint({
        ...base,
        messages: [{ role: 'user', content: [{ type: 'text', text: 'x', cache: hour }] }],
      }),
    ).toBe(true);
    // A breakpoint on a block inside a tool result (Anthropic allows one there) counts as well.
    expect(
      carriesOneHourBreakpoint({
        ...base,
        messages: [
          {
            role: 'user',
            content: [
              {
                type: 'tool-result',
                toolCallId: 't1',
                isError: false,
                content: [{ type: 'text', text: 'r', cache: hour }],
              },
            ],
          },
        ],
      }),
    ).toBe(true);
  });
});
