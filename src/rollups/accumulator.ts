/**
 * Per-slot accumulators: what one group's measurements add to one slot (count, and per field count, sum,
 * min, max, first, last). A commit folds its batch into these first and writes one update per touched
 * slot; a recomputation folds the measurements it reads from the buckets into the same structure.
 *
 * Only numeric values (JS numbers and BSON `Int32`, `Double`, `Long`, `Decimal128`) are accumulated;
 * `first`/`last` are the values at the earliest/latest time, ties broken by the smaller/larger value (so
 * that they are `$min`/`$max` of `{t, v}` pairs and can be maintained by atomic updates).
 *
 * @packageDocumentation
 */
import { bsonNumberValue } from '../util/bson-value.js';
import type { ResolvedField } from './spec.js';

/** One field's accumulator in a slot. */
export interface FieldAcc {
  /** Numeric values seen. */
  count: number;
  /** Their sum (a double). */
  sum: number;
  /** Smallest and largest value (meaningful when `count > 0`). */
  min: number;
  max: number;
  /** Time and value of the first and last value. */
  firstT: number;
  firstV: number;
  lastT: number;
  lastV: number;
}

/** A group's accumulators for one slot (the finest slot of its layout). */
export interface SlotAcc {
  /** Slot start, epoch ms (set again when the accumulator is reused, see {@link resetSlotAcc}). */
  start: number;
  /** Measurements in the slot. */
  count: number;
  /** One accumulator per resolved field, in spec order. */
  readonly fields: FieldAcc[];
}

/**
 * A new, empty slot accumulator.
 *
 * @param start - slot start, epoch ms.
 * @param nFields - number of fields.
 * @returns the accumulator.
 */
export function makeSlotAcc(start: number, nFields: number): SlotAcc {
  const fields = new Array<FieldAcc>(nFields);
  for (let i = 0; i < nFields; i++) {
    fields[i] = { count: 0, sum: 0, min: 0, max: 0, firstT: 0, firstV: 0, lastT: 0, lastV: 0 };
  }
  return { start, count: 0, fields };
}

/**
 * Empty an accumulator for reuse (the commit-time fold keeps a pool of them per rollup).
 *
 * @param acc - an accumulator no write refers to any more.
 * @param start - its new slot start.
 */
export function resetSlotAcc(acc: SlotAcc, start: number): void {
  acc.start = start;
  acc.count = 0;
  for (const f of acc.fields) {
    f.count = 0;
    f.sum = 0;
    f.min = 0;
    f.max = 0;
    f.firstT = 0;
    f.firstV = 0;
    f.lastT = 0;
    f.lastV = 0;
  }
}

/**
 * Add one measurement to a slot. Field names were checked at spec time (no `__proto__`, no `$`, no dot),
 * and inherited properties are never numbers, so plain property reads are safe and allocate nothing.
 *
 * @param acc - the slot's accumulator.
 * @param measurement - the measurement.
 * @param timeMs - its time.
 * @param fields - the resolved fields.
 */
export function foldMeasurement(
  acc: SlotAcc,
  measurement: Readonly<Record<string, unknown>>,
  timeMs: number,
  fields: ReadonlyArray<ResolvedField>,
): void {
  acc.count++;
  for (let i = 0; i < fields.length; i++) {
    const raw = measurement[(fields[i] as ResolvedField).name];
    const v = typeof raw === 'number' ? raw : bsonNumberValue(raw);
    if (v === undefined) continue;
    addValue(acc.fields[i] as FieldAcc, v, timeMs);
  }
}

/**
 * {@link foldMeasurement} for a measurement held as a row of numbers: field `i` of the rollup is at
 * `row + positions[i]` of `values`, or absent when its position is -1.
 *
 * @param acc - the slot's accumulator.
 * @param values - the rows.
 * @param row - where the measurement's row starts.
 * @param positions - each field's offset in the row (-1: none).
 * @param timeMs - the measurement's time.
 */
export function foldRow(
  acc: SlotAcc,
  values: Float64Array,
  row: number,
  positions: Int32Array,
  timeMs: number,
): void {
  acc.count++;
  for (let i = 0; i < positions.length; i++) {
    const at = positions[i] as number;
    if (at >= 0) addValue(acc.fields[i] as FieldAcc, values[row + at] as number, timeMs);
  }
}

/**
 * `a < b` in BSON order, where NaN is below every number (as `$min`/`$max` and the storage's counters
 * compare): a NaN is the minimum, and the maximum only when every value is NaN.
 */
function isBelow(a: number, b: number): boolean {
  return a < b || (a !== a && b === b);
}

function addValue(f: FieldAcc, v: number, t: number): void {
  if (f.count === 0) {
    f.count = 1;
    f.sum = v;
    f.min = v;
    f.max = v;
    f.firstT = f.lastT = t;
    f.firstV = f.lastV = v;
    return;
  }
  f.count++;
  f.sum += v;
  if (isBelow(v, f.min)) f.min = v;
  if (isBelow(f.max, v)) f.max = v;
  if (t < f.firstT || (t === f.firstT && v < f.firstV)) {
    f.firstT = t;
    f.firstV = v;
  }
  if (t > f.lastT || (t === f.lastT && v > f.lastV)) {
    f.lastT = t;
    f.lastV = v;
  }
}

/**
 * Add `from` into `into` (same slot or an enclosing one).
 *
 * @param into - the accumulator that grows.
 * @param from - the accumulator added.
 */
export function mergeSlotAcc(into: SlotAcc, from: SlotAcc): void {
  into.count += from.count;
  for (let i = 0; i < into.fields.length; i++) {
    const a = into.fields[i] as FieldAcc;
    const b = from.fields[i] as FieldAcc;
    if (b.count === 0) continue;
    if (a.count === 0) {
      Object.assign(a, b);
      continue;
    }
    a.count += b.count;
    a.sum += b.sum;
    if (isBelow(b.min, a.min)) a.min = b.min;
    if (isBelow(a.max, b.max)) a.max = b.max;
    if (b.firstT < a.firstT || (b.firstT === a.firstT && b.firstV < a.firstV)) {
      a.firstT = b.firstT;
      a.firstV = b.firstV;
    }
    if (b.lastT > a.lastT || (b.lastT === a.lastT && b.lastV > a.lastV)) {
      a.lastT = b.lastT;
      a.lastV = b.lastV;
    }
  }
}
