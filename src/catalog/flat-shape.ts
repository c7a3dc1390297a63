/**
 * The shape of a flat measurement (names in order, each value a number, a date or a boolean) that an open
 * compressed bucket has already accepted: a measurement of the same shape adds no field and cannot
 * change the bucket's schema, so the rollover check skips the size estimate and the schema walk for it
 * (one pass of name comparisons instead of two passes of map lookups per field).
 *
 * Why that is exact, for a bucket whose `knownShape` is S:
 * - its schema recorded every name of S with the canonical type of S's kind (schema entries of an open
 *   bucket never change once recorded), and each name is a committed or staged column;
 * - a measurement with exactly S's names and kinds therefore gets `compatible` from `updateSchema`
 *   without recording anything, and no new field from `calculateBucketFieldsAndSizeChange`;
 * - numbers, dates and booleans are at most 8 bytes, below the 8.0 large-measurement threshold, so a
 *   compressed bucket estimates nothing for them: the size change is zero.
 *
 * Shapes are shared: a collection keeps its last shape, and a bucket whose measurement has that shape
 * points to it (one pointer per bucket). A bucket records a shape once, from the first measurement the
 * full checks accept after its first: a bucket whose measurements vary keeps the first shape (which the
 * others miss) or {@link kNoFlatShape}, rather than building a shape per measurement.
 *
 * @packageDocumentation
 */
import type { Measurement } from '../bucket-format/bucket-document.js';
import { MeasurementLayout, valueKind } from '../util/bson-validation.js';
import { hasOwnField } from '../util/safe-record.js';

/** The names (in enumeration order, without the metaField) and kinds of a flat measurement. */
export interface FlatShape {
  readonly names: ReadonlyArray<string>;
  readonly kinds: ReadonlyArray<number>;
  /** The metaField left out. */
  readonly metaField: string | undefined;
  /**
   * A measurement layout (see {@link matchesKnownShape}) known to match this shape: the last one whose
   * measurement was checked field by field and matched.
   */
  layout: MeasurementLayout | undefined;
}

/** The shape of a bucket that has none to remember (its first checked measurement was not flat): matches nothing. */
export const kNoFlatShape: FlatShape = Object.freeze({
  names: Object.freeze([]),
  kinds: Object.freeze([]),
  metaField: undefined,
  layout: undefined,
});

/**
 * Whether `measurement` has exactly the names (in order) and kinds of `shape`.
 *
 * @param shape - a bucket's known shape, or `undefined`.
 * @param measurement - a validated measurement.
 * @param metaField - the collection's metaField (left out).
 * @returns `true` only when it matches.
 */
export function matchesFlatShape(
  shape: FlatShape | undefined,
  measurement: Measurement,
  metaField: string | undefined,
): boolean {
  if (shape === undefined || shape === kNoFlatShape || shape.metaField !== metaField) return false;
  const { names, kinds } = shape;
  let i = 0;
  // for-in with an own-property check, as the passes it replaces (no array of names per measurement).
  for (const name in measurement) {
    if (!hasOwnField(measurement, name) || name === metaField) continue;
    if (names[i] !== name || kinds[i] !== valueKind(measurement[name])) return false;
    i++;
  }
  return i === names.length;
}

/**
 * {@link matchesFlatShape} for a staged item, answered without reading its fields when the validation
 * walk gave it a layout this shape has matched before (every measurement of a layout has the same names
 * in the same order and values of the same kinds, so the answer is the same). A layout is remembered
 * only after a field-by-field match, and only a token the walk made.
 *
 * @param shape - a bucket's known shape, or `undefined`.
 * @param item - the measurement and the layout the walk gave it.
 * @param metaField - the collection's metaField (left out).
 * @returns `true` only when the measurement matches.
 */
export function matchesKnownShape(
  shape: FlatShape | undefined,
  item: { readonly measurement: Measurement; readonly layout?: MeasurementLayout | undefined },
  metaField: string | undefined,
): boolean {
  const layout = item.layout;
  if (layout !== undefined && shape?.layout === layout && shape.metaField === metaField) return true;
  if (!matchesFlatShape(shape, item.measurement, metaField)) return false;
  // kNoFlatShape never matches, so the shape here is one of the mutable ones flatShapeOf made.
  if (layout instanceof MeasurementLayout) (shape as FlatShape).layout = layout;
  return true;
}

/**
 * The flat shape of `measurement`, or `undefined` when a value is not a number, date or boolean.
 *
 * @param measurement - a measurement the bucket has just accepted through the full checks.
 * @param metaField - the collection's metaField (left out).
 * @param previous - a shape to share when equal (the collection's last one).
 * @returns `previous` when the measurement has that shape, a new shape, or `undefined`.
 */
export function flatShapeOf(
  measurement: Measurement,
  metaField: string | undefined,
  previous: FlatShape | undefined,
): FlatShape | undefined {
  if (matchesFlatShape(previous, measurement, metaField)) return previous;
  const names: string[] = [];
  const kinds: number[] = [];
  for (const name in measurement) {
    if (!hasOwnField(measurement, name) || name === metaField) continue;
    const kind = valueKind(measurement[name]);
    if (kind === 0) return undefined;
    names.push(name);
    kinds.push(kind);
  }
  return { names, kinds, metaField, layout: undefined };
}
