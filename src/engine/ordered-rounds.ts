/**
 * Rounds of an ordered insert on a storage whose ordered `commitWrites` is not atomic (MongoDB's ordered
 * `bulkWrite` stops at its first failed operation but keeps what came before it).
 *
 * A bucket write holds every measurement of its batch, so when a call interleaves series (A, B, A, B) a
 * write sent before the failed one may hold measurements of its series from after the failed index. Cut
 * into rounds whose batches each hold consecutive measurements, written one round at a time in input
 * order, every write applied before a failure holds only measurements before the failed index.
 *
 * @packageDocumentation
 */
import type { InsertItem, StageResult, WriteBatch } from '../catalog/bucket-catalog.js';

/**
 * Where the round starting at `from` ends: before a measurement whose series appeared earlier in the
 * round but is not the previous measurement's series. A call with each series contiguous (a bulk load,
 * one measurement per series) is one round.
 *
 * @param items - the call's measurements.
 * @param indices - those still to write, ascending.
 * @param from - the position in `indices` where the round starts.
 * @returns the position in `indices` (exclusive) where the round ends.
 */
export function orderedRoundEnd(
  items: ReadonlyArray<InsertItem>,
  indices: ReadonlyArray<number>,
  from: number,
): number {
  const seen = new Set<string>();
  let previous: string | undefined;
  for (let p = from; p < indices.length; p++) {
    const key = (items[indices[p] as number] as InsertItem).metadata.key;
    if (key !== previous && seen.has(key)) return p;
    seen.add(key);
    previous = key;
  }
  return indices.length;
}

/**
 * The first staged measurement whose batch does not hold consecutive measurements (its batch took an
 * earlier measurement but not the previous one): a series whose measurements went back to an earlier
 * bucket (a late measurement reopening it). Staging results that are errors are skipped.
 *
 * @param staged - the staging results of a round, in input order.
 * @returns its position in `staged`, or -1 when every batch holds consecutive measurements.
 */
export function firstInterleaved(staged: ReadonlyArray<StageResult>): number {
  const seen = new Set<WriteBatch>();
  let previous: WriteBatch | undefined;
  for (let j = 0; j < staged.length; j++) {
    const result = staged[j] as StageResult;
    if (result.kind !== 'staged') continue;
    if (result.batch !== previous && seen.has(result.batch)) return j;
    seen.add(result.batch);
    previous = result.batch;
  }
  return -1;
}
