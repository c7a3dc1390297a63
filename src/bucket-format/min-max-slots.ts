/**
 * Typed per-field slots of a flat `MinMax` (the server keeps its `MinMax` tree for every bucket; this is
 * a faster form of the same state for the usual time series): while every top-level field holds a number
 * or a date on both sides, each field's minimum and maximum are two unboxed doubles in one array, and
 * folding a measurement compares numbers in a few contiguous arrays instead of walking tree nodes that
 * each hold a boxed value.
 *
 * The slots cover only folds that change no structure: a measurement with a field the slots do not have,
 * or a value of another type (a string, a BSON number class, `NaN`, an object), is refused, and the
 * `MinMax` goes back to its tree (see `min-max.ts`), which then takes the measurement.
 *
 * @packageDocumentation
 */
import { hasOwnField } from '../util/safe-record.js';

/** A slot's type: the field holds JS numbers (on both sides). */
export const kSlotNumber = 1;
/** A slot's type: the field holds dates (epoch milliseconds in the slot). */
export const kSlotDate = 2;

/** The slots of one flat MinMax. */
export interface MinMaxSlots {
  /** Field names in stored order; fixed for the slots' life (a new field ends them). */
  readonly names: ReadonlyArray<string>;
  /** Per field, {@link kSlotNumber} or {@link kSlotDate}; fixed for the slots' life. */
  readonly kinds: Uint8Array;
  /**
   * Per field `i`: `values[2i]` the minimum, `values[2i + 1]` the maximum. A JS array of doubles rather
   * than a `Float64Array`: V8 keeps it unboxed all the same, and a snapshot's `slice()` is then a plain
   * young-generation copy, where a typed array's costs an `ArrayBuffer` allocated outside the heap.
   */
  readonly values: number[];
}

/**
 * Slots holding the given values, if every field is a number or a date on both sides (numbers not `NaN`).
 *
 * @param names - field names in stored order.
 * @param minValues - each field's minimum.
 * @param maxValues - each field's maximum.
 * @returns the slots, or `undefined` when a value cannot be held in one.
 */
export function slotsOf(
  names: ReadonlyArray<string>,
  minValues: ReadonlyArray<unknown>,
  maxValues: ReadonlyArray<unknown>,
): MinMaxSlots | undefined {
  const n = names.length;
  // Checked before anything is allocated: a bucket with a string field tries on every snapshot.
  for (let i = 0; i < n; i++) {
    const min = minValues[i];
    const max = maxValues[i];
    if (slotNumber(min) === undefined || slotNumber(max) === undefined || kindOf(min) !== kindOf(max)) {
      return undefined;
    }
  }
  // Sized once: grown by pushes the array keeps about twice the room it needs for the bucket's life.
  const values = new Array<number>(2 * n);
  let same = n === lastNames.length;
  for (let i = 0; i < n; i++) {
    values[2 * i] = slotNumber(minValues[i]) as number;
    values[2 * i + 1] = slotNumber(maxValues[i]) as number;
    same &&= names[i] === lastNames[i] && kindOf(minValues[i]) === lastKinds[i];
  }
  if (!same) {
    const kinds = new Uint8Array(n);
    for (let i = 0; i < n; i++) kinds[i] = kindOf(minValues[i]);
    lastNames = names;
    lastKinds = kinds;
  }
  return { names: lastNames, kinds: lastKinds, values };
}

/**
 * Slots of one measurement given as numbers in column order, a date (epoch ms) first and numbers after,
 * folded over a first value of the date field: what {@link slotsOf} makes of a MinMax that held
 * `[firstMin, firstMax]` in its first field and then folded the measurement.
 *
 * @param names - field names in column order (copied if kept).
 * @param row - the values: the date at `start`, the numbers after it.
 * @param start - where the measurement's values start in `row`.
 * @param firstMin - the date field's minimum before the measurement, epoch ms.
 * @param firstMax - its maximum.
 * @returns the slots, or `undefined` when a number is `NaN` (no slot holds it).
 */
export function slotsOfRow(
  names: ReadonlyArray<string>,
  row: ReadonlyArray<number>,
  start: number,
  firstMin: number,
  firstMax: number,
): MinMaxSlots | undefined {
  const n = names.length;
  for (let i = 1; i < n; i++) if (Number.isNaN(row[start + i])) return undefined;
  const values = new Array<number>(2 * n);
  const time = row[start] as number;
  values[0] = time < firstMin ? time : firstMin;
  values[1] = time > firstMax ? time : firstMax;
  let same = n === lastNames.length && names[0] === lastNames[0] && lastKinds[0] === kSlotDate;
  for (let i = 1; i < n; i++) {
    const x = row[start + i] as number;
    values[2 * i] = x;
    values[2 * i + 1] = x;
    same &&= names[i] === lastNames[i] && lastKinds[i] === kSlotNumber;
  }
  if (!same) {
    const kinds = new Uint8Array(n).fill(kSlotNumber);
    kinds[0] = kSlotDate;
    lastNames = names.slice();
    lastKinds = kinds;
  }
  return { names: lastNames, kinds: lastKinds, values };
}

/**
 * The names and kinds of the slots made last, shared by the next slots with the same fields (neither ever
 * changes): the buckets of a collection mostly have the same fields, and a typed array costs about 180
 * bytes of heap whatever it holds.
 */
let lastNames: ReadonlyArray<string> = [];
let lastKinds = new Uint8Array(0);

/**
 * Fold one measurement into the slots, if they can take it.
 *
 * A refused measurement may have been folded partly: its fields before the refused one are in the slots.
 * That is harmless, because the caller then folds the whole measurement again into the tree, and folding a
 * value twice changes nothing the first fold did not.
 *
 * @param slots - the slots.
 * @param doc - the measurement.
 * @param skipField - a top-level field to leave out (the metaField).
 * @param minChanged - the bit to return when a minimum changed.
 * @param maxChanged - the bit to return when a maximum changed.
 * @returns the changed sides' bits, or -1 when the slots cannot take the measurement.
 */
export function foldIntoSlots(
  slots: MinMaxSlots,
  doc: Readonly<Record<string, unknown>>,
  skipField: string | undefined,
  minChanged: number,
  maxChanged: number,
): number {
  const { names, kinds, values } = slots;
  let changed = 0;
  // Where the next field is expected when the measurement lists the fields in stored order (the usual
  // case): found by one comparison, without a search.
  let guess = 0;
  // for-in with an own-property check: no array of names per measurement.
  for (const name in doc) {
    if (!hasOwnField(doc, name)) continue;
    const value = doc[name];
    if (value === undefined || name === skipField) continue;
    const i = names[guess] === name ? guess : names.indexOf(name);
    if (i < 0) return -1;
    guess = i + 1;
    let x: number;
    if (typeof value === 'number') {
      if (kinds[i] !== kSlotNumber || value !== value) return -1;
      x = value;
    } else if (value instanceof Date) {
      x = value.getTime();
      if (kinds[i] !== kSlotDate || x !== x) return -1;
    } else return -1;
    changed |= foldSlot(values, i, x, minChanged, maxChanged);
  }
  return changed;
}

/**
 * Fold one number into slot `i`.
 *
 * @param values - the slots' values.
 * @param i - the slot.
 * @param x - the number (not NaN).
 * @param minChanged - the bit to return when the minimum changed.
 * @param maxChanged - the bit to return when the maximum changed.
 * @returns the changed sides' bits.
 */
export function foldSlot(
  values: number[],
  i: number,
  x: number,
  minChanged: number,
  maxChanged: number,
): number {
  let changed = 0;
  // Strict comparisons, as the tree's: an equal value (0 and -0 too) keeps the slot's.
  if (x < (values[2 * i] as number)) {
    values[2 * i] = x;
    changed = minChanged;
  }
  if (x > (values[2 * i + 1] as number)) {
    values[2 * i + 1] = x;
    changed |= maxChanged;
  }
  return changed;
}

/**
 * The value a slot holds, as the tree holds it: a number, or a new `Date`.
 *
 * @param kind - the slot's type.
 * @param x - the slot's number.
 * @returns the value.
 */
export function slotValue(kind: number, x: number): unknown {
  return kind === kSlotDate ? new Date(x) : x;
}

/** The number a value is held as in a slot, if it can be. */
function slotNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value === value ? value : undefined;
  if (value instanceof Date) {
    const ms = value.getTime();
    return ms === ms ? ms : undefined;
  }
  return undefined;
}

function kindOf(value: unknown): number {
  return typeof value === 'number' ? kSlotNumber : kSlotDate;
}
