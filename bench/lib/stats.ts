// The two summaries the rig reports, shared by the probe process and the report so that both
// compute a percentile the same way.

/** Median of the finite values (mean of the two middle ones for an even count); NaN when none. */
export const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/** Nearest-rank percentile (p in 0..100); NaN for an empty list. */
export const percentile = (xs: number[], p: number): number => {
  if (xs.length === 0) return NaN;
  const s = xs.slice().sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
