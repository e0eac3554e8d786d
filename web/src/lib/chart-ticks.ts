/**
 * "Nice" axis ticks from zero: steps of 1, 2, 2.5 or 5 times a power of ten, so every tick is a round figure
 * ($0.0025, $0.0050, …; 500, 1,000, …) and one number of decimals fits the whole axis.
 */
export function niceTicks(highest: number, count = 4): number[] {
  if (!(highest > 0) || !Number.isFinite(highest)) return [0];
  const rough = highest / count;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 2.5, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= rough) ?? 10 * power;
  const ticks: number[] = [];
  // Rounded to the step's own precision, so 0.1 + 0.2 style float noise never reaches a label.
  for (let index = 0; index * step < highest + step * 1e-9 || ticks.length < 2; index += 1)
    ticks.push(Number((index * step).toPrecision(12)));
  if (ticks[ticks.length - 1]! < highest) ticks.push(Number((ticks.length * step).toPrecision(12)));
  return ticks;
}
