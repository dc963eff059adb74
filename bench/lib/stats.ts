/** Order statistics and the power-law fit the rows report. */

export interface Summary {
  n: number;
  min: number;
  median: number;
  max: number;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

export function summarize(xs: readonly number[]): Summary {
  return { n: xs.length, min: Math.min(...xs), median: median(xs), max: Math.max(...xs) };
}

/** Least-squares slope of log(y) on log(x): y ~ x^k, returns k. */
export function fitExponent(points: readonly { x: number; y: number }[]): number {
  const lx = points.map((p) => Math.log(p.x));
  const ly = points.map((p) => Math.log(p.y));
  return slope(lx, ly);
}

/** Least-squares slope of y on x. */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    const dx = (xs[i] as number) - mx;
    num += dx * ((ys[i] as number) - my);
    den += dx * dx;
  }
  return num / den;
}
