/**
 * Bucket time rounding and the bucket time window (docs/mongodb-behaviour.md §2.3, §2.4; newest `roundTimestampBySeconds`).
 *
 * Times are epoch milliseconds. Rounding floors toward −∞ in milliseconds, so pre-1970 times round down
 * (−1 ms with 60 s rounding → −60 000 ms), unlike 5.0–7.0 which truncated seconds toward the epoch.
 *
 * @packageDocumentation
 */

/**
 * Round `timeMs` down to a multiple of `roundingSeconds`, toward −∞.
 *
 * @param timeMs - epoch milliseconds (an integer).
 * @param roundingSeconds - `bucketRoundingSeconds` (≥ 1).
 * @returns the rounded bucket start in epoch milliseconds.
 * @example
 * ```ts
 * roundTimestampBySeconds(Date.UTC(2024, 9, 4, 10, 14, 33), 60); // 2024-10-04T10:14:00Z
 * roundTimestampBySeconds(-1, 60); // -60000
 * ```
 */
export function roundTimestampBySeconds(timeMs: number, roundingSeconds: number): number {
  const r = roundingSeconds * 1000;
  // JS `%` truncates like C++; a negative remainder means we are above the floor.
  const rem = timeMs % r;
  return rem < 0 ? timeMs - rem - r : timeMs - rem;
}

/** Where a measurement time falls relative to a bucket's window. */
export type TimeWindowPosition = 'inside' | 'before' | 'after';

/**
 * Locate `timeMs` relative to the window `[bucketStartMs, bucketStartMs + maxSpanSeconds)`.
 *
 * @param timeMs - measurement time, epoch ms.
 * @param bucketStartMs - rounded bucket start (`control.min.<time>`), epoch ms.
 * @param maxSpanSeconds - `bucketMaxSpanSeconds`.
 * @returns `'before'` (time backward), `'after'` (time forward) or `'inside'`.
 */
export function timeWindowPosition(
  timeMs: number,
  bucketStartMs: number,
  maxSpanSeconds: number,
): TimeWindowPosition {
  if (timeMs - bucketStartMs >= maxSpanSeconds * 1000) return 'after';
  if (timeMs < bucketStartMs) return 'before';
  return 'inside';
}
