// Small statistics for the bench pieces. Kept out of bench/run.mjs: a
// piece that imported the script it is run from would wait on that script's
// own top-level await, and the bench would stop without a word.

/** The p-th percentile (nearest rank) of an ascending array. */
export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}
