/**
 * What BSON can hold: one walk over a measurement that validates it and makes the copy tsbuckets keeps
 * (the server's `fixDocumentForInsert` and `validateDepth` in `ops/insert.cpp`, plus what the `mongodb`
 * driver's serializer refuses or rewrites before a document reaches the server).
 *
 * The copy is exactly what was validated: a caller changing its objects afterwards (or a getter answering
 * differently the second time) cannot change what is stored, and every value is already in the form a
 * bucket reads back whether it is open or compressed:
 *
 * | given                                   | stored                                                       |
 * | --------------------------------------- | ------------------------------------------------------------ |
 * | `undefined` (field or array element)    | `null`, as the driver sends it (`ignoreUndefined: false`)    |
 * | array hole                              | `null`                                                       |
 * | `bigint` within int64                   | `Long`                                                       |
 * | `RegExp`                                | `BSONRegExp` with the flags js-bson writes (`i`, `s`, `m`)   |
 * | `Uint8Array` (and `Buffer`)             | `Binary` of subtype 0 (a copy of the bytes)                  |
 * | `Date` (also of another realm)          | a new `Date`                                                 |
 * | string with a lone surrogate            | the string BSON holds (U+FFFD in its place)                  |
 * | plain or null-prototype object, array   | a fresh plain object / array; an own `__proto__` stays a field |
 * | js-bson value (`_bsontype`)             | itself (`Binary` copied), after its tag and version are checked |
 *
 * Refused (a {@link TimeseriesError}):
 *
 * | value                                                      | code                 |
 * | ---------------------------------------------------------- | -------------------- |
 * | function, symbol, `Map`, `Set`, class instance, other typed array | `BadValue`    |
 * | `bigint` outside int64, Invalid Date                       | `BadValue`           |
 * | `_bsontype` that js-bson 7 does not write (forged, unknown, other major version) | `BadValue` |
 * | object with its own `Symbol.toStringTag` (js-bson would take it for a Date, RegExp...) | `BadValue` |
 * | field name or regex pattern containing NUL                 | `BadValue`           |
 * | two field names BSON writes alike (lone surrogates)        | `BadValue`           |
 * | circular value                                             | `BadValue`           |
 * | document nested deeper than 180 levels                     | `Overflow`           |
 * | document over 16 MiB                                       | `BSONObjectTooLarge` |
 *
 * @packageDocumentation
 */
import { Binary, BSONRegExp, Long } from 'bson';

import { TimeseriesError } from '../errors.js';
import { bsonValueSize, indexNameLength, jsBsonRegexFlags, kBSONObjMaxUserSize } from './bson-value.js';
import { defineField, hasOwnField } from './safe-record.js';
import type { PackedRows } from './packed-rows.js';

/**
 * How many levels of nesting a stored document may have, the top-level document being level 1
 * (`BSONDepth::getMaxDepthForUserStorage()`: the server's default 200 minus 20 kept for its own wrappers).
 */
export const kMaxDepthForUserStorage = 180;

/** js-bson marks its classes with this symbol; its serializer refuses values of another major version. */
const kBsonVersionSymbol = Symbol.for('@@mdb.bson.version');
const kBsonMajorVersion = 7;
const kInt64Min = -(2n ** 63n);
const kInt64Max = 2n ** 63n - 1n;
/** An array element takes at least 3 bytes (type, one-digit name, NUL): longer arrays cannot fit. */
const kMaxArrayLength = Math.floor(kBSONObjMaxUserSize / 3);

/** The js-bson tags whose values are stored as they are (immutable, or checked by js-bson itself). */
const kImmutableTags: ReadonlySet<string> = new Set([
  'Int32',
  'Long',
  'Double',
  'Decimal128',
  'ObjectId',
  'ObjectID',
  'Timestamp',
  'MinKey',
  'MaxKey',
  'BSONSymbol',
]);

/** `String.prototype.isWellFormed` / `toWellFormed` (Node 20; not in the ES2023 library types). */
interface WellFormedString {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/** `s` as BSON holds it: a lone surrogate is written (and read back) as U+FFFD. */
function wellFormed(s: string): string {
  const w = s as unknown as WellFormedString;
  return w.isWellFormed() ? s : w.toWellFormed();
}

/**
 * The walk's state. One per insert call, reset for each measurement (no allocation per measurement); not
 * module-level: a getter met during a walk may start another insert, whose walk must not share it.
 */
export interface Walk {
  /**
   * An upper bound of the BSON bytes seen so far: strings and names count 3 bytes per UTF-16 unit, numbers
   * 8, so that no string is measured on the hot path; the exact size is computed only when this bound
   * passes 16 MiB.
   */
  size: number;
  /** The objects and arrays from the root to the current value, for cycle detection. */
  readonly path: object[];
  /** A top-level field whose object value may be replaced by one validated before (see {@link KnownValue}). */
  knownField: string | undefined;
  /** Consulted for an object in {@link Walk.knownField}. */
  knownValue: KnownValue | undefined;
  /**
   * Consulted by {@link packOrCopy} for an object in {@link Walk.knownField} that
   * {@link Walk.knownValue} does not know (see {@link NewValue}); without it, such a measurement is copied.
   */
  newValue: NewValue | undefined;
  /**
   * After {@link copyMeasurement}: the measurement's {@link MeasurementLayout}, or `undefined` when the
   * walk cannot vouch for one (the first measurement of a layout, one with more than 64 fields).
   */
  layout: MeasurementLayout | undefined;
  /** Set while walking when the positional caches were written (the layout changed). */
  layoutWritten: boolean;
  /** The top-level field count of the measurement walked last; -1 when its layout is not tracked. */
  fields: number;
  /**
   * The copy made of the last date the walk met, and its time (`NaN` before the first): the next date of
   * the same time gets the same copy. The copies are the engine's own, which it never changes (readers
   * get copies of what is stored), and the measurements of one call mostly share their time (a bulk
   * loader sends one tick of every series): one copy, not one per measurement, lives until the commit.
   */
  lastDate: Date | undefined;
  lastDateMs: number;
  /**
   * After {@link packOrCopy} packed a measurement: where its row starts, its time (epoch ms) and its
   * metaField's value as stored (`undefined` without one).
   */
  row: number;
  rowTimeMs: number;
  rowMeta: unknown;
  /**
   * The value the measurement walked last gave in {@link Walk.knownField}, as the caller gave it (before
   * it was copied or replaced): its identity finds a meta object's series, without reading the caller's
   * field a second time (a getter runs once).
   */
  givenMeta: unknown;
}

/**
 * An opaque token the validation walk gives a measurement: every measurement given the same token has
 * the same top-level field names, in the same order, and values of the same kinds (number, date,
 * boolean, anything else). A catalog that has checked one measurement of a layout against a bucket's
 * shape knows the answer for the others without reading their fields. Only this module makes tokens.
 */
export class MeasurementLayout {
  static #made = 0;
  /** Tokens in the order they were made (1, 2, ...): what tells them apart in a message or a test. */
  readonly serial: number;
  /** The top-level field names of the layout's measurements, in their order. */
  readonly names: ReadonlyArray<string>;
  /** The {@link valueKind} of each one's value. */
  readonly kinds: ReadonlyArray<number>;
  /** The last {@link MeasurementLayout.rowPlan} asked for, and the fields it was asked for. */
  #plan: RowPlan | undefined;
  #planMetaField: string | undefined;
  #planTimeField: string | undefined;

  private constructor(serial: number, names: ReadonlyArray<string>, kinds: ReadonlyArray<number>) {
    this.serial = serial;
    this.names = names;
    this.kinds = kinds;
  }

  /**
   * A new token. Made only by the walk: a caller cannot make one that another measurement would match.
   *
   * @param names - the layout's field names, in order.
   * @param kinds - their values' kinds.
   * @returns a token no measurement has yet.
   */
  static make(names: ReadonlyArray<string>, kinds: ReadonlyArray<number>): MeasurementLayout {
    return new MeasurementLayout(++MeasurementLayout.#made, names, kinds);
  }

  /**
   * How a measurement of this layout is held as a row (see {@link packOrCopy}), or `undefined` when it
   * cannot be: a field other than the metaField is not a number or a date, the time field is not a date,
   * or there is an `_id` (whose value the insert returns).
   *
   * @param metaField - the collection's metaField (its value is not in the row).
   * @param timeField - the collection's time field.
   * @returns the plan, or `undefined`.
   */
  rowPlan(metaField: string | undefined, timeField: string): RowPlan | undefined {
    if (this.#planTimeField !== timeField || this.#planMetaField !== metaField) {
      this.#plan = planRow(this.names, this.kinds, metaField, timeField);
      this.#planMetaField = metaField;
      this.#planTimeField = timeField;
    }
    return this.#plan;
  }
}

/** How the measurements of a layout are held as rows (see {@link MeasurementLayout.rowPlan}). */
export interface RowPlan {
  /** The position of the metaField among the layout's names (-1: none). */
  readonly metaAt: number;
  /** The position of the time in the row (the row leaves the meta out). */
  readonly timeAt: number;
  /** Values per row: every field but the meta. */
  readonly width: number;
  /** The names of a row's values, in their order: the layout's names but the meta (frozen). */
  readonly fields: ReadonlyArray<string>;
}

function planRow(
  names: ReadonlyArray<string>,
  kinds: ReadonlyArray<number>,
  metaField: string | undefined,
  timeField: string,
): RowPlan | undefined {
  const metaAt = metaField === undefined ? -1 : names.indexOf(metaField);
  const timeIndex = names.indexOf(timeField);
  if (timeIndex < 0 || kinds[timeIndex] !== kDateKind) return undefined;
  for (let i = 0; i < names.length; i++) {
    if (i === metaAt) continue;
    const kind = kinds[i];
    if (names[i] === '_id' || (kind !== kNumberKind && kind !== kDateKind)) return undefined;
  }
  const timeAt = metaAt >= 0 && metaAt < timeIndex ? timeIndex - 1 : timeIndex;
  const fields = Object.freeze(names.filter((_, i) => i !== metaAt));
  return { metaAt, timeAt, width: fields.length, fields };
}

/**
 * What to store for an object the walk would otherwise validate and copy, when the caller has validated
 * the same contents before (a measurement's meta, which an ingester sends again and again): the stored
 * value, having added an upper bound of its BSON bytes to `walk.size` (as the walk counts a value), or
 * `undefined`, having added nothing, to copy the object as usual. It must return only a value equal to
 * what the copy of `value` would be.
 */
export type KnownValue = (value: object, walk: Walk) => unknown;

/**
 * What to store for an object in the known field that {@link KnownValue} did not know (a new series'
 * meta), given its validated copy (as a copy of the measurement would hold it) and the object the caller
 * gave: a value equal to the copy (the series' normalised meta). It may throw to refuse the measurement.
 */
export type NewValue = (copy: unknown, given: object) => unknown;

/**
 * Validate a measurement and copy it, in one walk (see the module comment for what is rewritten and what
 * is refused).
 *
 * @param doc - a measurement as given by the caller.
 * @param walk - scratch state from {@link makeWalk}, reused across the measurements of a call.
 * @returns a fresh document holding exactly what will be stored.
 * @throws {@link TimeseriesError} `BadValue`, `Overflow` or `BSONObjectTooLarge` (module comment).
 * @example
 * ```ts
 * copyMeasurement({ ts: new Date(0), n: 5n, tags: [undefined] }); // { ts, n: Long(5), tags: [null] }
 * ```
 */
export function copyMeasurement(doc: unknown, walk: Walk = makeWalk()): Record<string, unknown> {
  if (!isDocument(doc)) {
    throw new TimeseriesError('BadValue', `a measurement must be a document, not ${describe(doc)}`);
  }
  walk.size = 0;
  // A refused measurement may leave containers on the path; the next one starts from the root.
  // Only then: emptying an array gives up its storage, and the next push would allocate it again.
  if (walk.path.length !== 0) walk.path.length = 0;
  const token = layoutToken;
  walk.layoutWritten = false;
  walk.layout = undefined;
  walk.givenMeta = undefined;
  const out = copyDocument(doc, walk, 1);
  if (walk.size > kBSONObjMaxUserSize) checkSize(out);
  walk.layout = settleLayout(token, walk);
  return out;
}

/**
 * Validate a measurement into `rows` when the measurements walked before it repeat a layout held as rows
 * ({@link MeasurementLayout.rowPlan}: numbers and dates, and the meta) and it has that layout, else as
 * {@link copyMeasurement} does. Packed, no copy is made: each field is read once (in the order a copy
 * reads them), checked to be of the layout's name and kind, and its value written to the row (a date as
 * its time); the meta is stored as a known meta object ({@link Walk.knownValue}), a well-formed string or
 * a number. A measurement that turns out not to fit (another name, kind or count, an invalid date, a meta
 * not known) is copied from what was read and what follows, each field still read once, exactly as
 * {@link copyMeasurement} would copy it.
 *
 * @param doc - a measurement as given by the caller.
 * @param walk - the call's walk; after a packed measurement, {@link Walk.row}, {@link Walk.rowTimeMs} and
 *   {@link Walk.rowMeta} describe it and {@link Walk.layout} is its layout.
 * @param rows - the call's rows.
 * @param metaField - the collection's metaField.
 * @param timeField - the collection's time field.
 * @returns `undefined` when packed, else the copy.
 * @throws {@link TimeseriesError} as {@link copyMeasurement}.
 */
export function packOrCopy(
  doc: unknown,
  walk: Walk,
  rows: PackedRows,
  metaField: string | undefined,
  timeField: string,
): Record<string, unknown> | undefined {
  const layout = layoutToken;
  // Tried only while the call's measurements repeat a layout (the one before had the layout of the one
  // before it): a measurement that turns out not to fit is read once and copied, which costs more than
  // copying it at once, and measurements whose fields come and go (optional fields) rarely repeat one.
  const plan = walk.layout === layout ? layout?.rowPlan(metaField, timeField) : undefined;
  if (layout === undefined || plan === undefined || !isDocument(doc)) return copyMeasurement(doc, walk);
  const { names, kinds } = layout;
  const n = names.length;
  const { metaAt } = plan;
  const values = rows.reserve(plan.width);
  const start = rows.length;
  // The meta's bytes (the rest is a few numbers): a measurement that could be near the 16 MiB limit is
  // copied, and measured there.
  walk.size = 0;
  let end = start;
  let i = 0;
  let meta: unknown = undefined;
  let stored: unknown = undefined;
  // Set at the first field that does not fit the layout: the rest is copied into it, and it is copied.
  let rest: Record<string, unknown> | undefined;
  for (const key in doc) {
    if (!hasOwnField(doc, key)) continue;
    if (rest !== undefined) {
      defineField(rest, key, doc[key]);
      continue;
    }
    if (i >= n || key !== names[i]) {
      rest = rowMeasurement(layout, metaAt, values, start, i, meta);
      defineField(rest, key, doc[key]);
      continue;
    }
    const value = doc[key];
    let fits: boolean;
    if (i === metaAt) {
      meta = value;
      walk.givenMeta = value;
      stored = storedMeta(value, walk);
      // A new series' meta object is taken once every other field has fitted (below): a measurement
      // that does not fit is copied, meta and all, and a meta refused is refused having read every
      // field, as a copy reads them.
      fits =
        stored !== undefined || (walk.newValue !== undefined && typeof value === 'object' && value !== null);
    } else if (kinds[i] === kNumberKind) {
      fits = typeof value === 'number';
      if (fits) values[end++] = value as number;
    } else {
      const t = value instanceof Date ? value.getTime() : Number.NaN;
      fits = t === t;
      if (fits) values[end++] = t;
    }
    if (!fits) {
      rest = rowMeasurement(layout, metaAt, values, start, i, meta);
      defineField(rest, key, value);
      continue;
    }
    i++;
  }
  if (rest === undefined && i === n && metaAt >= 0 && stored === undefined) {
    stored = newMeta(doc, names[metaAt] as string, meta as object, walk);
  }
  if (rest === undefined && (i !== n || walk.size > kPackedMetaBytes)) {
    rest = rowMeasurement(layout, metaAt, values, start, i, meta);
  }
  if (rest !== undefined) return copyMeasurement(rest, walk);
  rows.length = end;
  walk.row = start;
  walk.rowTimeMs = values[start + plan.timeAt] as number;
  walk.rowMeta = stored;
  walk.layout = layout;
  return undefined;
}

/**
 * The meta as a packed measurement stores it: a known meta object's normalised value, a well-formed string,
 * a number; `undefined` for any other (copied instead).
 */
function storedMeta(value: unknown, walk: Walk): unknown {
  if (typeof value === 'number') return value;
  if (typeof value === 'string') {
    walk.size += 3 * value.length;
    return (value as unknown as WellFormedString).isWellFormed() ? value : undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  return walk.knownValue?.(value, walk);
}

/**
 * The meta object of a new series as a packed measurement stores it ({@link Walk.newValue}, which must be
 * set): validated and copied as a copy of `doc` would copy it (the same errors, the same bytes counted),
 * then given to the hook.
 */
function newMeta(doc: object, key: string, value: object, walk: Walk): unknown {
  // A meta refused before may have left containers on the path: this one starts from the root.
  if (walk.path.length !== 0) walk.path.length = 0;
  walk.path.push(doc);
  const copy = copyValue(value, walk, 1, key);
  walk.path.pop();
  return (walk.newValue as NewValue)(copy, value);
}

/** Most bytes a packed measurement's meta may take (by the walk's bound); a larger one is copied. */
const kPackedMetaBytes = 1 << 20;

/**
 * A plain object of the first `count` fields of a measurement of `layout` held as a row from `start` of
 * `values` (see {@link packOrCopy}): each number as it is, each date a new `Date` of its time, and `meta`
 * at the layout's meta position `metaAt`. What {@link packOrCopy} copies from when a measurement turns out
 * not to fit (the fields it read, the meta as the caller gave it), and what a packed measurement is built
 * into when asked for (all of them, the meta as stored).
 *
 * @param layout - the measurement's layout.
 * @param metaAt - the metaField's position among the layout's names (-1: none); not in the row.
 * @param values - the rows.
 * @param start - where the measurement's row starts.
 * @param count - how many of the layout's fields.
 * @param meta - the value at `metaAt`.
 * @returns the object.
 */
export function rowMeasurement(
  layout: MeasurementLayout,
  metaAt: number,
  values: Float64Array,
  start: number,
  count: number,
  meta: unknown,
): Record<string, unknown> {
  const { names, kinds } = layout;
  const out: Record<string, unknown> = {};
  let v = start;
  for (let i = 0; i < count; i++) {
    const name = names[i] as string;
    if (i === metaAt) defineField(out, name, meta);
    else {
      const x = values[v++] as number;
      defineField(out, name, kinds[i] === kDateKind ? new Date(x) : x);
    }
  }
  return out;
}

/**
 * The layout of the measurement just walked. The positional caches ({@link topLevelNames},
 * {@link topLevelKinds}, {@link layoutCount}) never change while {@link layoutToken} stays the same
 * object: every write clears the token first, so a walk that matched every cached position, with the
 * token it started with still current, has the layout the token stands for (a walk run meanwhile by a
 * getter, which wrote, cleared it). A walk that changed the caches starts a new token for the
 * measurements after it.
 */
function settleLayout(token: MeasurementLayout | undefined, walk: Walk): MeasurementLayout | undefined {
  const fields = walk.fields;
  if (!walk.layoutWritten && token !== undefined && layoutToken === token && fields === layoutCount) {
    return token;
  }
  layoutToken =
    fields < 0
      ? undefined
      : MeasurementLayout.make(topLevelNames.slice(0, fields), topLevelKinds.slice(0, fields));
  layoutCount = fields;
  return undefined;
}

/**
 * Validate one value that will be stored inside a document at `depth` (a meta value set by an update, an
 * element of a filter), and copy it as {@link copyMeasurement} copies values.
 *
 * @param value - the value.
 * @param depth - nesting level of the document holding it (1: a top-level field).
 * @returns the stored form of the value.
 * @throws {@link TimeseriesError} as {@link copyMeasurement}.
 */
export function copyBsonValue(value: unknown, depth = 1): unknown {
  const walk = makeWalk();
  const out = copyValue(value, walk, depth, '');
  if (walk.size > kBSONObjMaxUserSize) checkSize(out);
  return out;
}

/**
 * Scratch state for {@link copyMeasurement}.
 *
 * @returns a fresh walk state.
 */
export function makeWalk(): Walk {
  return {
    size: 0,
    path: [],
    knownField: undefined,
    knownValue: undefined,
    newValue: undefined,
    layout: undefined,
    layoutWritten: false,
    fields: -1,
    lastDate: undefined,
    lastDateMs: Number.NaN,
    row: -1,
    rowTimeMs: Number.NaN,
    rowMeta: undefined,
    givenMeta: undefined,
  };
}

/** A plain object or a null-prototype object: what js-bson writes as an embedded document. */
function isDocument(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** The exact size of a copy whose bound passed the limit: refused if the size does too. */
function checkSize(copy: unknown): void {
  const size = bsonValueSize(copy);
  if (size > kBSONObjMaxUserSize) throw tooLarge(size);
}

/**
 * Field names already checked (well formed, no NUL): measurements repeat the same few names, and checking
 * one costs two native string scans. Bounded; cleared when full.
 */
const checkedNames = new Set<string>();
const kMaxCheckedNames = 10_000;

/**
 * The top-level names of the last measurements, by position (bounded): a measurement whose fields come
 * as the previous one's (the same name strings, as an ingester building every document alike makes them)
 * checks each name with one comparison instead of a set lookup.
 */
const topLevelNames: string[] = [];
const kMaxTopLevelPositions = 64;
/** The kinds of the values at those positions ({@link valueKind}). */
const topLevelKinds: number[] = [];
/** The field count of the layout the caches hold; -1 for none. */
let layoutCount = -1;
/** What the caches hold now, as a token; `undefined` while no walk has vouched for them since a write. */
let layoutToken: MeasurementLayout | undefined;

/** The {@link valueKind} of a number. */
export const kNumberKind = 1;
/** The {@link valueKind} of a date. */
export const kDateKind = 2;

/**
 * A value's kind, as layouts and the catalog's flat shapes compare values: number (any width), date,
 * boolean, or 0 for anything else.
 *
 * @param v - a stored value.
 * @returns 1 for a number, 2 for a date, 3 for a boolean, 0 otherwise.
 */
export function valueKind(v: unknown): number {
  if (typeof v === 'number') return kNumberKind;
  if (typeof v === 'boolean') return 3;
  return v instanceof Date ? kDateKind : 0;
}

/** Record that a measurement has `name` with a value of `kind` at top-level `position` (caches written). */
function recordPosition(walk: Walk, position: number, name: string, kind: number): void {
  layoutToken = undefined;
  walk.layoutWritten = true;
  topLevelNames[position] = name;
  topLevelKinds[position] = kind;
}

/** Whether `key` can be a field name as it is (no NUL, no lone surrogate). */
function isPlainName(key: string): boolean {
  if (checkedNames.has(key)) return true;
  if (key.includes('\0') || wellFormed(key) !== key) return false;
  if (checkedNames.size >= kMaxCheckedNames) checkedNames.clear();
  checkedNames.add(key);
  return true;
}

function copyDocument(doc: Record<string, unknown>, walk: Walk, depth: number): Record<string, unknown> {
  walk.path.push(doc);
  const sizeBefore = walk.size;
  // A spread copies the document in one step (own enumerable keys; an own `__proto__` key stays a plain
  // field; each getter is read once); then only the values that need another form are replaced.
  const out: Record<string, unknown> = { ...doc };
  let size = 5; // int32 length + trailing NUL
  // Top-level positions are compared with the previous measurement's (names and value kinds, see
  // {@link MeasurementLayout}); nested documents start past the cached positions.
  let position = depth === 1 ? 0 : kMaxTopLevelPositions;
  // for-in with an own-property check, not Object.keys: no array of names per document (this runs for
  // every measurement).
  for (const key in out) {
    if (!hasOwnField(out, key)) continue;
    const at = position++;
    const cached = topLevelNames[at] === key;
    if (!cached) {
      if (!isPlainName(key)) {
        // A name with NUL or a lone surrogate (rare): rebuilt name by name from the copy.
        walk.size = sizeBefore;
        if (depth === 1) walk.fields = -1;
        const renamed = renameFields(out, walk, depth);
        walk.path.pop();
        return renamed;
      }
    }
    size += 2 + 3 * key.length;
    const value = out[key];
    // Numbers are stored as they are: the common case, without a call.
    if (typeof value === 'number') {
      size += 8;
      if (at < kMaxTopLevelPositions && (!cached || topLevelKinds[at] !== kNumberKind)) {
        recordPosition(walk, at, key, kNumberKind);
      }
      continue;
    }
    if (key === '_bsontype' && value !== undefined) {
      // js-bson would take the document for one of its classes (a forged value).
      throw new TimeseriesError('BadValue', `Unrecognized or invalid _bsontype: ${describe(value)}`);
    }
    let stored: unknown;
    const given = depth === 1 && key === walk.knownField;
    if (given) walk.givenMeta = value;
    const known =
      given && typeof value === 'object' && value !== null ? walk.knownValue?.(value, walk) : undefined;
    if (known !== undefined) {
      defineField(out, key, known);
      stored = known;
    } else {
      stored = copyValue(value, walk, depth, key);
      if (stored !== value) defineField(out, key, stored);
    }
    if (at < kMaxTopLevelPositions) {
      const kind = valueKind(stored);
      if (!cached || topLevelKinds[at] !== kind) recordPosition(walk, at, key, kind);
    }
  }
  if (depth === 1) walk.fields = position <= kMaxTopLevelPositions ? position : -1;
  walk.size += size;
  walk.path.pop();
  return out;
}

/** {@link copyDocument} for a document with a name to check or rewrite: `fields` is already a copy. */
function renameFields(fields: Record<string, unknown>, walk: Walk, depth: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let size = 5;
  for (const key in fields) {
    if (!hasOwnField(fields, key)) continue;
    const name = wellFormed(key);
    if (name.includes('\0')) {
      throw new TimeseriesError(
        'BadValue',
        `field name ${JSON.stringify(name)} must not contain null bytes`,
        {
          field: name,
        },
      );
    }
    if (hasOwnField(out, name)) {
      // Two names that differ only in lone surrogates are one name in BSON.
      throw new TimeseriesError('BadValue', `duplicate field name ${JSON.stringify(name)}`, { field: name });
    }
    const value = fields[key];
    if (name === '_bsontype' && value !== undefined) {
      throw new TimeseriesError('BadValue', `Unrecognized or invalid _bsontype: ${describe(value)}`);
    }
    size += 2 + 3 * name.length;
    if (depth === 1 && name === walk.knownField) walk.givenMeta = value;
    defineField(out, name, copyValue(value, walk, depth, name));
  }
  walk.size += size;
  return out;
}

function copyArray(arr: ReadonlyArray<unknown>, walk: Walk, depth: number, name: string): unknown[] {
  if (arr.length > kMaxArrayLength) throw tooLarge(arr.length * 3);
  walk.path.push(arr);
  const out = new Array<unknown>(arr.length);
  let size = 5;
  for (let i = 0; i < arr.length; i++) {
    size += 2 + indexNameLength(i);
    out[i] = copyValue(arr[i], walk, depth, name);
  }
  walk.size += size;
  walk.path.pop();
  return out;
}

/**
 * The stored form of `v`, found `depth` levels deep (the level of the document or array holding it), its
 * bytes added to `walk.size`. `name` is the field it is in, for messages.
 */
function copyValue(v: unknown, walk: Walk, depth: number, name: string): unknown {
  switch (typeof v) {
    case 'number':
      walk.size += 8;
      return v;
    case 'string': {
      const s = wellFormed(v);
      walk.size += 5 + 3 * s.length;
      return s;
    }
    case 'boolean':
      walk.size += 1;
      return v;
    case 'undefined':
      // What the driver sends with `ignoreUndefined: false`: a null element.
      return null;
    case 'bigint':
      if (v < kInt64Min || v > kInt64Max) {
        throw new TimeseriesError('BadValue', `BigInt value ${String(v)} is out of the int64 range`, {
          field: name,
        });
      }
      walk.size += 8;
      return Long.fromBigInt(v);
    case 'object':
      if (v === null) return null;
      return copyObject(v, walk, depth, name);
    default:
      throw unsupported(v, name);
  }
}

function copyObject(v: object, walk: Walk, depth: number, name: string): unknown {
  const proto: unknown = Object.getPrototypeOf(v);
  const container = Array.isArray(v) || proto === Object.prototype || proto === null;
  if (container) {
    if (depth >= kMaxDepthForUserStorage) {
      // A cycle nests without end, so it always reaches the limit: only then is the path searched for a
      // container met twice (no search per container on the hot path).
      if (walk.path.includes(v) || new Set(walk.path).size !== walk.path.length) {
        throw new TimeseriesError('BadValue', 'Cannot convert circular structure to BSON', { field: name });
      }
      throw new TimeseriesError(
        'Overflow',
        `cannot insert document because it exceeds ${kMaxDepthForUserStorage} levels of nesting`,
        { field: name },
      );
    }
    if (Array.isArray(v)) return copyArray(v, walk, depth + 1, name);
    // js-bson tells a date, a regex or a binary by this tag: a document carrying one is sent as that type
    // (a "Date" without getTime fails the driver's insert) and would poison every read of its bucket.
    if (Object.hasOwn(v, Symbol.toStringTag)) {
      throw new TimeseriesError(
        'BadValue',
        `Unsupported value for BSON in field '${name}': an object with its own Symbol.toStringTag`,
        { field: name },
      );
    }
    return copyDocument(v as Record<string, unknown>, walk, depth + 1);
  }
  // Dates first: the most common object in a measurement.
  if (v instanceof Date) {
    const t = v.getTime();
    if (Number.isNaN(t))
      throw new TimeseriesError('BadValue', `'${name}' is an invalid Date`, { field: name });
    walk.size += 8;
    if (t === walk.lastDateMs) return walk.lastDate;
    const copy = new Date(t);
    walk.lastDate = copy;
    walk.lastDateMs = t;
    return copy;
  }
  const tag = (v as { _bsontype?: unknown })._bsontype;
  if (tag !== undefined) return copyBsonClass(v, tag, walk, depth, name);
  if (v instanceof RegExp) {
    if (v.source.includes('\0')) throw nulInRegex(v.source, name);
    const flags = jsBsonRegexFlags(v);
    walk.size += 3 * v.source.length + 1 + flags.length + 1;
    return new BSONRegExp(v.source, flags);
  }
  if (v instanceof Uint8Array) {
    walk.size += 5 + v.byteLength;
    return new Binary(Uint8Array.prototype.slice.call(v), 0);
  }
  // A Date of another realm (a `vm` context, a worker's structured clone): js-bson, which recognises one by
  // its tag, sends it as a date; copied as this realm's.
  const time = foreignDateTime(v);
  if (time !== undefined) return copyValue(new Date(time), walk, depth, name);
  throw unsupported(v, name);
}

/**
 * The time of a Date of another realm, or `undefined` for anything else (an object whose
 * `Symbol.toStringTag` says `Date` is not one: `getTime` refuses it).
 */
function foreignDateTime(v: object): number | undefined {
  if (Object.prototype.toString.call(v) !== '[object Date]') return undefined;
  try {
    return Date.prototype.getTime.call(v);
  } catch {
    return undefined;
  }
}

function copyBsonClass(v: object, tag: unknown, walk: Walk, depth: number, name: string): unknown {
  if ((v as Record<symbol, unknown>)[kBsonVersionSymbol] !== kBsonMajorVersion) {
    throw new TimeseriesError('BadValue', 'Unsupported BSON version, bson types must be from bson 7.x.x', {
      field: name,
    });
  }
  if (typeof tag === 'string' && kImmutableTags.has(tag)) {
    walk.size += immutableSize(v, tag);
    return v;
  }
  switch (tag) {
    case 'Binary': {
      const binary = v as Binary;
      const bytes = Uint8Array.prototype.slice.call(binary.buffer, 0, binary.position);
      walk.size += 5 + bytes.byteLength + (binary.sub_type === 2 ? 4 : 0);
      return new Binary(bytes, binary.sub_type);
    }
    case 'BSONRegExp': {
      const regex = v as BSONRegExp;
      if (regex.pattern.includes('\0')) throw nulInRegex(regex.pattern, name);
      walk.size += 3 * (regex.pattern.length + regex.options.length) + 2;
      return v;
    }
    case 'Code':
    case 'DBRef': {
      // Their embedded documents (scope, fields) are checked like any document; the value is kept.
      const inner = tag === 'Code' ? (v as { scope?: unknown }).scope : (v as { fields?: unknown }).fields;
      const before = walk.size;
      if (inner != null) copyValue(inner, walk, depth, name);
      walk.size = before + bsonValueSize(v);
      return v;
    }
    default:
      throw new TimeseriesError('BadValue', `Unrecognized or invalid _bsontype: ${describe(tag)}`, {
        field: name,
      });
  }
}

function immutableSize(v: object, tag: string): number {
  switch (tag) {
    case 'Int32':
      return 4;
    case 'Decimal128':
      return 16;
    case 'ObjectId':
    case 'ObjectID':
      return 12;
    case 'MinKey':
    case 'MaxKey':
      return 0;
    case 'BSONSymbol':
      return 5 + 3 * String((v as { value?: unknown }).value).length;
    default:
      return 8;
  }
}

function nulInRegex(pattern: string, name: string): TimeseriesError {
  return new TimeseriesError(
    'BadValue',
    `regular expression ${JSON.stringify(pattern)} must not contain null bytes`,
    {
      field: name,
    },
  );
}

function tooLarge(size: number): TimeseriesError {
  return new TimeseriesError(
    'BSONObjectTooLarge',
    `BSONObj size: ${size} is invalid. Size must be between 0 and ${kBSONObjMaxUserSize}(16MB)`,
  );
}

function unsupported(v: unknown, name: string): TimeseriesError {
  return new TimeseriesError('BadValue', `Unsupported value for BSON in field '${name}': ${describe(v)}`, {
    field: name,
  });
}

/**
 * A short description of any value for an error message. Never throws: a BigInt, a symbol or an object
 * without a prototype would make `JSON.stringify` or a template literal throw.
 *
 * @param v - any value.
 * @returns e.g. `function`, `symbol`, `object of class Map`, `string "abc"`.
 */
export function describe(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return `string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)}`;
    case 'bigint':
    case 'number':
    case 'boolean':
      return `${typeof v} ${String(v)}`;
    case 'object': {
      if (v === null) return 'null';
      if (Array.isArray(v)) return 'array';
      const proto: unknown = Object.getPrototypeOf(v);
      if (proto === null) return 'object';
      const ctor = (proto as { constructor?: { name?: unknown } }).constructor;
      const className = typeof ctor === 'function' && typeof ctor.name === 'string' ? ctor.name : 'unknown';
      return className === 'Object' ? 'object' : `object of class ${className}`;
    }
    default:
      return typeof v;
  }
}
