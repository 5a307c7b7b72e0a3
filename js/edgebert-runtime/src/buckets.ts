/**
 * Bucket choice: a fixed-shape export (TF.js, TFLite) runs a few sequence lengths ("buckets", the manifest's
 * `buckets[].seq_len`); a text is padded to the smallest bucket that holds its tokens, as edgebert/buckets.py picks.
 */

/** The smallest bucket ≥ `length` (the largest when none is: the text was truncated to it). */
export function pickBucket(length: number, buckets: readonly number[]): number {
  if (!buckets.length) throw new Error('pickBucket needs at least one bucket');
  const sorted = [...buckets].sort((a, b) => a - b);
  return sorted.find((b) => b >= length) ?? sorted[sorted.length - 1];
}

/** Sorted, de-duplicated lengths; each an integer ≥ 2. */
export function checkedLengths(lengths: readonly number[], what: string): number[] {
  const sorted = [...new Set(lengths)].sort((a, b) => a - b);
  if (!sorted.length || sorted.some((n) => !Number.isInteger(n) || n < 2)) {
    throw new Error(`${what} must be integers ≥ 2, got [${lengths.join(', ')}]`);
  }
  return sorted;
}
