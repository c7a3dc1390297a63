/**
 * The batches of a commit round folded into one accumulator per touched slot (the finest slot of the
 * rollup's layout) and group, for each rollup, before anything is written. A batch holds one series'
 * measurements, usually in time order and within one slot or two: the slot of the previous measurement
 * is tried first, by comparing with its bounds (no division), and a measurement outside it looks for its
 * slot among the few touched so far.
 *
 * @packageDocumentation
 */
import type { InsertItem } from '../catalog/bucket-catalog-internal.js';
import { PackedItem } from '../catalog/packed-item.js';
import type { WriteBatch } from '../catalog/write-batch.js';
import { kNumberKind } from '../util/bson-validation.js';
import type { RowPlan } from '../util/bson-validation.js';
import { foldMeasurement, foldRow, makeSlotAcc, resetSlotAcc } from './accumulator.js';
import type { SlotAcc } from './accumulator.js';
import type { GroupCache, RollupGroup } from './group.js';
import { unitSlot, unitSlotEnd } from './rollup-writer.js';
import type { ResolvedRollupSpec } from './spec.js';

/**
 * The times of the batch being folded, reused by every fold: the times are read once per batch for all
 * rollups, and used before the fold's first write (synchronously), so no two folds use them at once.
 */
let scratchTimes = new Float64Array(1024);

/** What the fold needs of a rollup. */
export interface FoldedRollup {
  readonly spec: ResolvedRollupSpec;
  /** Its groups by series. */
  readonly groups: GroupCache;
  /** Its accumulators to reuse (see {@link releaseSlotAccs}). */
  readonly pool: SlotAcc[];
}

/** One rollup's part of a round: the groups it touches and each one's accumulators (same positions). */
export interface RoundFold {
  readonly groups: RollupGroup[];
  readonly accs: SlotAcc[][];
}

/**
 * Fold a round's batches into each rollup's accumulators, per group: the series of one group (a
 * region's hosts) share one object (see `GroupCache`), hence one list of accumulators and one write.
 * Synchronous: each batch's times are read once for all rollups, into a shared buffer.
 *
 * @param rollups - the rollups.
 * @param batches - the round's written batches.
 * @returns per rollup (same positions), its part of the round.
 */
export function foldRound(
  rollups: ReadonlyArray<FoldedRollup>,
  batches: ReadonlyArray<WriteBatch>,
): RoundFold[] {
  const folds: RoundFold[] = [];
  const indexOf: Array<Map<RollupGroup, number>> = [];
  for (let k = 0; k < rollups.length; k++) {
    folds.push({ groups: [], accs: [] });
    indexOf.push(new Map());
  }
  for (const batch of batches) {
    const { items, bucket } = batch;
    const times = batchTimes(items);
    for (let k = 0; k < rollups.length; k++) {
      const r = rollups[k] as FoldedRollup;
      const fold = folds[k] as RoundFold;
      const group = r.groups.get(bucket.key.metaKey, bucket.normalizedMeta);
      const index = indexOf[k] as Map<RollupGroup, number>;
      let at = index.get(group);
      if (at === undefined) {
        at = fold.groups.length;
        index.set(group, at);
        fold.groups.push(group);
        fold.accs.push([]);
      }
      foldBatch(fold.accs[at] as SlotAcc[], r.spec, items, times, r.pool);
    }
  }
  return folds;
}

/**
 * The times of a batch's measurements, epoch ms, in a buffer reused by the next call.
 *
 * @param items - the batch's items.
 * @returns the times (the first `items.length` entries); valid until the next call.
 */
function batchTimes(items: ReadonlyArray<InsertItem>): Float64Array {
  if (scratchTimes.length < items.length) scratchTimes = new Float64Array(items.length * 2);
  for (let i = 0; i < items.length; i++) scratchTimes[i] = (items[i] as InsertItem).timeMs;
  return scratchTimes;
}

/**
 * Fold a batch into one accumulator per touched slot, adding to those already in `accs` (the other
 * batches of the same group in one commit round). A measurement held as a row of its call is folded from
 * its row, without building it.
 *
 * @param accs - the group's accumulators so far, in order of first touch; grown.
 * @param spec - the rollup.
 * @param items - the batch's items.
 * @param times - their times (from `batchTimes`).
 * @param pool - accumulators to reuse (the rollup's, see {@link releaseSlotAccs}); taken from.
 */
function foldBatch(
  accs: SlotAcc[],
  spec: ResolvedRollupSpec,
  items: ReadonlyArray<InsertItem>,
  times: Float64Array,
  pool: SlotAcc[],
): void {
  let last: SlotAcc | undefined;
  let lastEnd = -Infinity;
  for (let i = 0; i < items.length; i++) {
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
    const item = items[i] as InsertItem;
    if (item instanceof PackedItem) {
      foldRow(last, item.rows.values, item.row, rowPositions(item, spec), t);
    } else foldMeasurement(last, item.measurement, t, spec.fields);
  }
}

/** The last answer of {@link rowPositions}, and what it was asked for (a round asks again and again). */
let lastPlan: RowPlan | undefined;
let lastSpec: ResolvedRollupSpec | undefined;
let lastPositions: Int32Array = new Int32Array(0);

/**
 * Where each of the rollup's fields is in the rows of `item`'s layout: its offset in the row, or -1 when
 * the layout has no such field or holds a date there (a date folds as nothing, as `foldMeasurement`
 * folds it).
 */
function rowPositions(item: PackedItem, spec: ResolvedRollupSpec): Int32Array {
  if (item.plan === lastPlan && spec === lastSpec) return lastPositions;
  const { names, kinds } = item.layout;
  const { metaAt } = item.plan;
  const positions = new Int32Array(spec.fields.length).fill(-1);
  spec.fields.forEach((field, f) => {
    let v = 0;
    for (let i = 0; i < names.length; i++) {
      if (i === metaAt) continue;
      if (names[i] === field.name && kinds[i] === kNumberKind) positions[f] = v;
      v++;
    }
  });
  lastPlan = item.plan;
  lastSpec = spec;
  lastPositions = positions;
  return positions;
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
