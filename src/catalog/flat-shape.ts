/**
 * The shape of the flat measurements (names, each value a number, a date or a boolean) that an open
 * compressed bucket has already accepted: a measurement whose fields are some of the shape's, each of its
 * kind, adds no field and cannot change the bucket's schema, so the rollover check skips the size
 * estimate and the schema walk for it (one pass of name comparisons, mostly one per field as measurements
 * come in one order, instead of two passes of map lookups per field).
 *
 * Why that is exact, for a bucket whose `knownShape` is S:
 * - its schema recorded every name of S with the canonical type of S's kind (schema entries of an open
 *   bucket never change once recorded), and each name is a committed or staged column;
 * - a measurement whose every name is one of S's, with S's kind, therefore gets `compatible` from
 *   `updateSchema` without recording anything, and no new field from `calculateBucketFieldsAndSizeChange`;
 * - numbers, dates and booleans are at most 8 bytes, below the 8.0 large-measurement threshold, so a
 *   compressed bucket estimates nothing for them: the size change is zero.
 *
 * A bucket records a shape from its first measurement ({@link firstFlatShape}: its schema and staged
 * names are that measurement's), and widens it with the fields of each later flat measurement the full
 * checks accept ({@link widenedFlatShape}), so
 * that measurements with optional fields (each a few of a sensor's readings) come to take the shortcut
 * once the bucket has seen each field. Each widening adds a field, so a bucket widens its shape at most
 * once per field; a bucket whose measurements are not flat (a string) keeps {@link kNoFlatShape}.
 *
 * Shapes are shared: a collection keeps its last shape, and a bucket whose shape has the same names and
 * kinds points to it (one pointer per bucket).
 *
 * @packageDocumentation
 */
import type { Measurement } from '../bucket-format/bucket-document.js';
import { MeasurementLayout, valueKind } from '../util/bson-validation.js';
import { hasOwnField } from '../util/safe-record.js';

/**
 * The names (without the metaField) and kinds of the flat measurements a bucket accepted: the first one's
 * in its enumeration order, then the names later ones added.
 */
export interface FlatShape {
  readonly names: ReadonlyArray<string>;
  readonly kinds: ReadonlyArray<number>;
  /** The metaField left out. */
  readonly metaField: string | undefined;
  /**
   * A measurement layout (see {@link matchesKnownShape}) known to fit this shape: the last one whose
   * measurement was checked field by field and fitted.
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
 * Whether every name of `measurement` (but `metaField`) is one of the shape's, its value of the kind the
 * shape has for it. Names are looked for where the previous one was found first: measurements mostly
 * come in one order.
 *
 * @param shape - a bucket's known shape, or `undefined`.
 * @param measurement - a validated measurement.
 * @param metaField - the collection's metaField (left out).
 * @returns `true` only when it fits.
 */
export function fitsFlatShape(
  shape: FlatShape | undefined,
  measurement: Measurement,
  metaField: string | undefined,
): boolean {
  if (shape === undefined || shape === kNoFlatShape || shape.metaField !== metaField) return false;
  return findsEveryName(shape, measurement, metaField, true);
}

/**
 * Whether every name of `measurement` (but `metaField`) is in `shape` with its kind (`all`), or whether
 * some name is not while every value is flat and every name in the shape has the shape's kind (`!all`:
 * the measurement widens the shape).
 */
function findsEveryName(
  shape: FlatShape,
  measurement: Measurement,
  metaField: string | undefined,
  all: boolean,
): boolean {
  const { names, kinds } = shape;
  let next = 0;
  let missing = false;
  for (const name in measurement) {
    if (!hasOwnField(measurement, name) || name === metaField) continue;
    const kind = valueKind(measurement[name]);
    const at = names[next] === name ? next : names.indexOf(name);
    if (at < 0) {
      if (all || kind === 0) return false;
      missing = true;
      continue;
    }
    if (kinds[at] !== kind) return false;
    next = at + 1;
  }
  return all || missing;
}

/**
 * {@link fitsFlatShape} for a staged item, answered without reading its fields when the validation walk
 * gave it a layout that has fitted this shape before (every measurement of a layout has the same names in
 * the same order and values of the same kinds, so the answer is the same). A layout is remembered only
 * after a field-by-field check, and only a token the walk made.
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
  if (!fitsFlatShape(shape, item.measurement, metaField)) return false;
  // kNoFlatShape never matches, so the shape here is one of the mutable ones flatShapeOf made.
  if (layout instanceof MeasurementLayout) (shape as FlatShape).layout = layout;
  return true;
}

/**
 * Whether every value of a layout's measurements but the metaField's is a number, a date or a boolean:
 * then the layout pins each value's canonical type, so whatever depends only on the names and those types
 * (a flat shape, whether a flat schema starts with the measurement) is the same for all of them. Any
 * other value (a string, an object, null) has one kind in a layout, whatever its type.
 *
 * @param layout - a layout the validation walk made.
 * @param metaField - the collection's metaField (left out).
 * @returns whether the layout is flat.
 */
export function isFlatLayout(layout: MeasurementLayout, metaField: string | undefined): boolean {
  const { names, kinds } = layout;
  for (let i = 0; i < names.length; i++) {
    if (kinds[i] === 0 && names[i] !== metaField) return false;
  }
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

/**
 * The shape of a new bucket's first measurement ({@link flatShapeOf}), remembering the measurement's
 * layout when its validation walk gave it one: the bucket's later measurements of that layout fit without
 * their fields being read (nor, for one held as a row of its call, built).
 *
 * @param item - the bucket's first measurement and its layout.
 * @param metaField - the collection's metaField (left out).
 * @param previous - a shape to share when equal (the collection's last one).
 * @returns the shape, or `undefined` when a value is not a number, date or boolean.
 */
export function firstFlatShape(
  item: { readonly measurement: Measurement; readonly layout?: MeasurementLayout | undefined },
  metaField: string | undefined,
  previous: FlatShape | undefined,
): FlatShape | undefined {
  const shape = flatShapeOf(item.measurement, metaField, previous);
  if (shape !== undefined && item.layout instanceof MeasurementLayout) shape.layout = item.layout;
  return shape;
}

/**
 * The shape a bucket knows once it has also accepted `measurement` (through the full checks): `shape`
 * followed by the measurement's names it lacks. `shape` itself when the measurement adds no name or is
 * not flat; `previous` when the widened shape has its names and kinds.
 *
 * @param shape - the bucket's known shape (not {@link kNoFlatShape}).
 * @param measurement - a measurement the bucket has just accepted through the full checks.
 * @param metaField - the collection's metaField (left out).
 * @param previous - a shape to share when equal (the collection's last one).
 * @returns the widened shape, or `shape`.
 */
export function widenedFlatShape(
  shape: FlatShape,
  measurement: Measurement,
  metaField: string | undefined,
  previous: FlatShape | undefined,
): FlatShape {
  if (shape.metaField !== metaField || !findsEveryName(shape, measurement, metaField, false)) return shape;
  const names = shape.names.slice();
  const kinds = shape.kinds.slice();
  for (const name in measurement) {
    if (!hasOwnField(measurement, name) || name === metaField || shape.names.includes(name)) continue;
    names.push(name);
    kinds.push(valueKind(measurement[name]));
  }
  if (previous !== undefined && sameShape(previous, names, kinds, metaField)) return previous;
  return { names, kinds, metaField, layout: undefined };
}

/** Whether `shape` has exactly these names and kinds. */
function sameShape(
  shape: FlatShape,
  names: ReadonlyArray<string>,
  kinds: ReadonlyArray<number>,
  metaField: string | undefined,
): boolean {
  if (shape.metaField !== metaField || shape.names.length !== names.length) return false;
  for (let i = 0; i < names.length; i++) {
    if (shape.names[i] !== names[i] || shape.kinds[i] !== kinds[i]) return false;
  }
  return true;
}
