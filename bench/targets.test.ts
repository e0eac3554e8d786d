import { describe, expect, it } from 'vitest';
import { floorNote, floorRatio } from './targets.js';

const ms = (value: number): string => `${value.toFixed(3)} ms`;

describe('the floor beside a target', () => {
  it('states the gateway as a multiple of the floor', () => {
    expect(floorRatio(0.39, 0.06)).toBe('6.5x');
    expect(floorNote(0.39, 0.06, ms)).toBe('floor 0.060 ms, 6.5x');
  });

  it('gives the floor without a multiple when either figure is not above zero', () => {
    expect(floorRatio(0.2, 0)).toBeUndefined();
    expect(floorRatio(-0.01, 0.3)).toBeUndefined();
    expect(floorNote(0.2, -0.01, ms)).toBe('floor -0.010 ms');
    expect(floorNote(0.2, Number.NaN, ms)).toBeUndefined();
  });

  it('says nothing when the floor was not measured', () => {
    expect(floorNote(0.2, undefined, ms)).toBeUndefined();
    expect(floorRatio(undefined, 0.1)).toBeUndefined();
  });
});
