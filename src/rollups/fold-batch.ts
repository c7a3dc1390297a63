/**
 * Committed batches folded into one accumulator per touched slot (the finest slot of the rollup's layout)
 * and group. A batch holds one series' measurements, usually in time order and within one slot or two:
 * the slot of the previous measurement is tried first, by comparing with its bounds (no division), and a
 * measurement outside it looks for its slot among the few touched so far.
 *
 * @packageDocumentation
 */
import type { Measurement } from '../bucket-format/bucket-document.js';
import { foldMeasurement, makeSlotAcc, resetSlotAcc } from './accumulator.js';
import type { SlotAcc } from './accumulator.js';
import { unitSlot, unitSlotEnd } from './rollup-writer.js';
import type { ResolvedRollupSpec } from './spec.js';

/**
 * The times of the batch being folded, reused by every fold: the times are read once per batch for all
 * rollups, and used before the fold's first write (synchronously), so no two folds use them at once.
 */
let scratchTimes = new Float64Array(1024);

/**
 * The times of a batch's measurements, epoch ms, in a buffer reused by the next call.
 *
 * @param measurements - the batch's measurements.
 * @param timeField - the collection's time field (a `Date` in every staged measurement).
 * @returns the times (the first `measurements.length` entries); valid until the next call.
 */
export function batchTimes(measurements: ReadonlyArray<Measurement>, timeField: string): Float64Array {
  if (scratchTimes.length < measurements.length) scratchTimes = new Float64Array(measurements.length * 2);
  for (let i = 0; i < measurements.length; i++) {
    scratchTimes[i] = ((measurements[i] as Readonly<Record<string, unknown>>)[timeField] as Date).getTime();
  }
  return scratchTimes;
}

/**
 * Fold a batch into one accumulator per touched slot, adding to those already in `accs` (the other
 * batches of the same group in one commit round).
 *
 * @param accs - the group's accumulators so far, in order of first touch; grown.
 * @param spec - the rollup.
 * @param measurements - the batch's measurements.
 * @param times - their times (from {@link batchTimes}).
 * @param pool - accumulators to reuse (the rollup's, see {@link releaseSlotAccs}); taken from.
 */
export function foldBatch(
  accs: SlotAcc[],
  spec: ResolvedRollupSpec,
  measurements: ReadonlyArray<Measurement>,
  times: Float64Array,
  pool: SlotAcc[],
): void {
  let last: SlotAcc | undefined;
  let lastEnd = -Infinity;
  for (let i = 0; i < measurements.length; i++) {
    const t = times[i] as number;
    if (last === undefined || t < last.start || t >= lastEnd) {
      const slot = unitSlot(spec, t);
      last = undefined;
      for (let j = 0; j < accs.length; j++) {
        if ((accs[j] as SlotAcc).start === slot) last = accs[j];
      }
      if (last === undefined) {
        last = pool.pop();
        if (last === undefined) last = makeSlotAcc(slot, spec.fields.length);
        else resetSlotAcc(last, slot);
        accs.push(last);
      }
      lastEnd = unitSlotEnd(spec, slot);
    }
    foldMeasurement(last, measurements[i] as Readonly<Record<string, unknown>>, t, spec.fields);
  }
}

/** A rollup's pool keeps at most this many accumulators (about one per group touched by a commit round). */
const kMaxPooled = 1024;

/**
 * Give accumulators back to their rollup's pool once nothing refers to them (their write is done: the
 * updates built from them hold copies of their numbers). A commit round then allocates no accumulator.
 *
 * @param pool - the rollup's pool.
 * @param accs - accumulators of a finished write.
 */
export function releaseSlotAccs(pool: SlotAcc[], accs: ReadonlyArray<SlotAcc>): void {
  for (let i = 0; i < accs.length && pool.length < kMaxPooled; i++) pool.push(accs[i] as SlotAcc);
}
