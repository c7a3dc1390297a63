/**
 * Version-1 (uncompressed) bucket documents (docs/mongodb-behaviour.md §1.3, §1.4, §7): the whole document inserted by a
 * bucket's first commit, and the MongoDB update document applied by each later commit.
 *
 * Field order of a bucket: `_id`, `control` (`version`, `min`, `max`), `meta` (only when the series has a
 * meta value), `data`. `data` has one sub-object per measurement field except the metaField, in order of
 * first appearance, keyed by the measurement's index in the bucket as a decimal string; a field missing
 * from a measurement has no key at that index.
 *
 * @packageDocumentation
 */
import type { ObjectId } from 'bson';

import { compareBsonValues, isPlainObject } from '../util/bson-value.js';
import type { SetOp } from './min-max.js';
import { defineField, getOwnField, hasOwnField, isPathSafeFieldName } from '../util/safe-record.js';

/** A measurement as given by the user: any object with a time field and other fields. */
export type Measurement = Readonly<Record<string, unknown>>;

/** The `control` object of a version-1 bucket. */
export interface ControlV1 {
  /** Always 1: uncompressed. */
  readonly version: 1;
  /** Per-path minimum; the time field holds the rounded bucket start. */
  readonly min: Record<string, unknown>;
  /** Per-path maximum. */
  readonly max: Record<string, unknown>;
}

/** A version-1 bucket document. */
export interface BucketDocumentV1 {
  /** Bucket id: its timestamp is the rounded bucket start. */
  readonly _id: ObjectId;
  /** Format version, min and max. */
  readonly control: ControlV1;
  /** Normalised meta value (absent when the series has none). */
  readonly meta?: unknown;
  /** Columns: field name → { "<index>": value }. */
  readonly data: Record<string, Record<string, unknown>>;
}

/** What the first commit of a bucket needs to build its document. */
export interface NewBucketDocumentInput {
  /** The bucket id. */
  readonly id: ObjectId;
  /** Whether the series has a meta value (a meta of `null` is a value). */
  readonly hasMeta: boolean;
  /** The normalised meta (ignored when `hasMeta` is false). */
  readonly normalizedMeta: unknown;
  /** `control.min` as built by the bucket's MinMax. */
  readonly min: Record<string, unknown>;
  /** `control.max` as built by the bucket's MinMax. */
  readonly max: Record<string, unknown>;
  /** The measurements, in bucket order. */
  readonly measurements: ReadonlyArray<Measurement>;
  /** The metaField name, excluded from `data`. */
  readonly metaField: string | undefined;
}

/**
 * Build a whole version-1 bucket document.
 *
 * @param input - id, meta, min/max and the measurements.
 * @returns a fresh document (objects keyed by user field names are built with own properties only).
 */
export function makeNewBucketDocument(input: NewBucketDocumentInput): BucketDocumentV1 {
  const data: Record<string, Record<string, unknown>> = {};
  appendColumns(data, input.measurements, 0, input.metaField);
  const doc: Record<string, unknown> = {
    _id: input.id,
    control: { version: 1, min: input.min, max: input.max },
  };
  if (input.hasMeta) doc.meta = input.normalizedMeta;
  doc.data = data;
  return doc as unknown as BucketDocumentV1;
}

/** What a later commit needs to build its update. */
export interface BucketUpdateInput {
  /** The measurements of this commit, in bucket order. */
  readonly measurements: ReadonlyArray<Measurement>;
  /** Number of measurements already in the stored document (the first new index). */
  readonly numPreviouslyCommittedMeasurements: number;
  /** Names of the columns the stored document already has. */
  readonly existingColumns: ReadonlySet<string>;
  /** Changes to `control.min` since the last commit (paths relative to `control.min`). */
  readonly minUpdates: ReadonlyArray<SetOp>;
  /** Changes to `control.max` since the last commit. */
  readonly maxUpdates: ReadonlyArray<SetOp>;
  /** The metaField name, excluded from `data`. */
  readonly metaField: string | undefined;
}

/**
 * A later commit's changes in structured form: the cells appended to each column, and the `control.min` /
 * `control.max` paths to set. It is what the update document says, kept so that an embedded storage can
 * apply it with one property store per value instead of parsing dotted paths.
 */
export interface BucketDelta {
  /** Index of the first appended measurement. */
  readonly firstIndex: number;
  /** Number of appended measurements. */
  readonly count: number;
  /** Touched columns; existing ones first (in first-appearance order), then the new ones. */
  readonly columns: ReadonlyArray<DeltaColumn>;
  /** Changes to `control.min` (paths relative to it; `[]` replaces it whole). */
  readonly min: ReadonlyArray<SetOp>;
  /** Changes to `control.max`. */
  readonly max: ReadonlyArray<SetOp>;
}

/** The cells one commit appends to one column. */
export interface DeltaColumn {
  /** The field name. */
  readonly field: string;
  /** Whether the column is new to the stored document (then it is set whole, after the existing ones). */
  readonly created: boolean;
  /** Values by offset from `firstIndex`; `undefined` where a measurement lacks the field. */
  readonly values: ReadonlyArray<unknown>;
}

/**
 * A later commit's update: the changes in structured form, and which MongoDB update form they take
 * (update operators, or a `$setField` pipeline when a field name cannot be written as a dotted path or
 * several new fields would land out of order). The update document itself is built only by a storage
 * that sends it somewhere ({@link bucketUpdateDocument}); an embedded storage applies the delta.
 */
export interface BucketUpdate {
  /** The MongoDB form of the update. */
  readonly kind: 'operators' | 'pipeline';
  /** Columns this update creates (absent from the stored document before it). */
  readonly newColumns: ReadonlyArray<string>;
  /** The changes. */
  readonly delta: BucketDelta;
}

/**
 * Describe the update that turns the stored document into the document with this commit's measurements
 * appended: `$set` of `data.<field>.<index>` for existing columns, of `data.<field>` (the whole new column)
 * for new ones, and of each changed `control.min`/`control.max` path.
 *
 * @param input - the commit's measurements, the stored state and the min/max changes.
 * @returns the update, in operator form unless a field name or field order forces the pipeline form.
 */
export function makeBucketUpdate(input: BucketUpdateInput): BucketUpdate {
  const delta = makeBucketDelta(input);
  const newColumns: string[] = [];
  let safe = true;
  for (const column of delta.columns) {
    if (column.created) newColumns.push(column.field);
    if (!isPathSafeFieldName(column.field)) safe = false;
  }
  // MongoDB applies the fields of one `$set` in name order: several new columns created out of name order
  // would land in a different order than a document built whole, so such a commit uses the pipeline form.
  const operators = safe && isSortedByName(newColumns) && pathsAreSafe(delta.min) && pathsAreSafe(delta.max);
  return { kind: operators ? 'operators' : 'pipeline', newColumns, delta };
}

/**
 * The MongoDB update document of a commit: `{ $set: {...} }` or a `$setField` pipeline.
 *
 * @param update - the commit's update.
 * @returns the update document.
 */
export function bucketUpdateDocument(
  update: BucketUpdate,
): Readonly<Record<string, unknown>> | ReadonlyArray<Readonly<Record<string, unknown>>> {
  return update.kind === 'operators' ? { $set: setDocumentFor(update.delta) } : pipelineFor(update.delta);
}

/**
 * The series of a bucket as the committing catalog knows it: whether the bucket has a meta, and its
 * normalised value.
 */
export interface BucketSeries {
  /** Whether the bucket has a `meta` field. */
  readonly hasMeta: boolean;
  /** The normalised meta value (`undefined` when `hasMeta` is false). */
  readonly normalizedMeta: unknown;
}

/**
 * The condition a stored bucket's `meta` meets while it is still `series`: BSON-equal to its meta, `null`
 * only as `null` (not as a missing field), absent when it has none. `$eq` compares the value whole: as a
 * bare value, an object whose field names start with `$` would be read as operators.
 *
 * @param series - the series.
 * @returns a condition on the field `meta`.
 */
export function seriesGuard(series: BucketSeries): { readonly meta: Readonly<Record<string, unknown>> } {
  if (!series.hasMeta) return { meta: { $exists: false } };
  const meta = series.normalizedMeta;
  return meta === null ? { meta: { $type: 'null' } } : { meta: { $eq: meta } };
}

/**
 * The condition a stored meta value must still meet: BSON-equal to `doc`'s meta, `null` only as `null`
 * (not as a missing field), absent when `doc` has none.
 *
 * @param doc - a bucket document as read.
 * @returns a condition on the bucket field `meta`.
 */
export function metaGuard(doc: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  return seriesGuard({ hasMeta: hasOwnField(doc, 'meta'), normalizedMeta: doc.meta });
}

/**
 * A filter matching the bucket document only while it is as read: same `_id`, format version,
 * measurement count and meta.
 *
 * @param doc - a bucket document as read.
 * @param timeField - the collection's time field.
 * @returns the guard filter.
 */
export function bucketStateGuard(
  doc: Readonly<Record<string, unknown>>,
  timeField: string,
): Readonly<Record<string, unknown>> {
  const guard: Record<string, unknown> = { _id: doc._id };
  const control = getOwnField(doc, 'control');
  const version = isPlainObject(control) ? getOwnField(control, 'version') : undefined;
  if (version !== undefined) guard['control.version'] = version;
  if (version === 1) {
    const data = getOwnField(doc, 'data');
    const column = isPlainObject(data) ? getOwnField(data, timeField) : undefined;
    const n = isPlainObject(column) ? Object.keys(column).length : 0;
    if (n > 0) defineField(guard, `data.${timeField}.${n - 1}`, { $exists: true });
    defineField(guard, `data.${timeField}.${n}`, { $exists: false });
  } else if (isPlainObject(control) && hasOwnField(control, 'count')) {
    guard['control.count'] = getOwnField(control, 'count');
  }
  return { ...guard, ...metaGuard(doc) };
}

/**
 * The condition on `control.closed` of a bucket that takes appends: a bucket marked closed (rewritten by a
 * delete of some of its measurements, or by hand) does not, whoever had it open.
 */
export const kNotClosed: Readonly<Record<string, unknown>> = Object.freeze({ $ne: true });

/**
 * Whether a stored bucket is marked closed (`control.closed: true`): it takes no appends.
 *
 * @param doc - the stored bucket.
 * @returns whether it is closed.
 */
export function isClosedBucket(doc: Readonly<Record<string, unknown>>): boolean {
  const control = getOwnField(doc, 'control');
  return typeof control === 'object' && control !== null && getOwnField(control, 'closed') === true;
}

/**
 * Whether a stored bucket is still of `series` (what {@link seriesGuard} checks, on a document in memory).
 *
 * @param doc - the stored bucket.
 * @param series - the series.
 * @returns whether its meta is the series' (compared as MongoDB compares values), or both have none.
 */
export function seriesMatchesDocument(doc: Readonly<Record<string, unknown>>, series: BucketSeries): boolean {
  if (!hasOwnField(doc, 'meta')) return !series.hasMeta;
  return series.hasMeta && compareBsonValues(doc.meta, series.normalizedMeta) === 0;
}

/** A later commit, as a storage receives it (docs/mongodb.md: "apply a commit's update to one bucket"). */
export interface BucketCommit {
  /** A version-1 commit (a compressed bucket's commit says `'compressed'`). */
  readonly format?: 'uncompressed';
  /** The bucket's `_id`. */
  readonly bucketId: ObjectId;
  /**
   * The bucket's series: the stored bucket must still be of it, so that a bucket whose meta another
   * writer changed (an update of the metaField from another process) is not appended to. Not checked
   * when absent (a commit built by hand).
   */
  readonly series?: BucketSeries;
  /** The time field: its column's indices say how many measurements the bucket holds. */
  readonly timeField: string;
  /** Measurements the stored bucket must hold (exactly) for the commit to apply. */
  readonly numPreviouslyCommittedMeasurements: number;
  /** The changes. */
  readonly update: BucketUpdate;
}

/**
 * The filter that guards a commit: the bucket's `_id`, and its time column holding exactly the
 * measurements the catalog committed (index `n − 1` present, `n` absent), so a bucket changed by another
 * writer is not appended to.
 *
 * @param commit - the commit.
 * @returns a MongoDB filter.
 */
export function commitGuardFilter(commit: BucketCommit): Readonly<Record<string, unknown>> {
  const n = commit.numPreviouslyCommittedMeasurements;
  // A null-prototype object: keys unique to each commit would otherwise create a new hidden class per commit.
  const guard = Object.create(null) as Record<string, unknown>;
  guard._id = commit.bucketId;
  guard[`data.${commit.timeField}.${n - 1}`] = { $exists: true };
  guard[`data.${commit.timeField}.${n}`] = { $exists: false };
  guard['control.closed'] = kNotClosed;
  if (commit.series !== undefined) guard.meta = seriesGuard(commit.series).meta;
  return guard;
}

/**
 * Apply a commit to a stored document if its guard holds: what {@link commitGuardFilter} and
 * {@link bucketUpdateDocument} do, with one property store per value.
 *
 * @param doc - the stored document with the commit's `_id`.
 * @param commit - the commit.
 * @returns whether the guard held (and the commit was applied).
 */
export function applyCommitToDocument(doc: Record<string, unknown>, commit: BucketCommit): boolean {
  if (!commitMatchesDocument(doc, commit)) return false;
  applyBucketDelta(doc, commit.update.delta);
  return true;
}

/**
 * Whether a commit's guard holds on a stored document (what {@link applyCommitToDocument} checks).
 *
 * @param doc - the stored document with the commit's `_id`.
 * @param commit - the commit.
 * @returns whether the document holds exactly the measurements the commit expects.
 */
export function commitMatchesDocument(doc: Readonly<Record<string, unknown>>, commit: BucketCommit): boolean {
  const data = getOwnField(doc, 'data');
  const times = typeof data === 'object' && data !== null ? getOwnField(data, commit.timeField) : undefined;
  if (typeof times !== 'object' || times === null || Array.isArray(times)) return false;
  const n = commit.numPreviouslyCommittedMeasurements;
  // Numeric keys: a plain object's integer-like keys are its elements; no index string is built.
  if (!hasOwnField(times, n - 1) || hasOwnField(times, n) || isClosedBucket(doc)) return false;
  return commit.series === undefined || seriesMatchesDocument(doc, commit.series);
}

/** Gather a commit's cells by column. */
function makeBucketDelta(input: BucketUpdateInput): BucketDelta {
  const { measurements, metaField, existingColumns } = input;
  const n = measurements.length;
  // One map of cells by field, in first-appearance order; whether a column exists is asked per column
  // below, not per cell.
  const byField = new Map<string, unknown[]>();
  for (let i = 0; i < n; i++) {
    const m = measurements[i] as Measurement;
    // for-in with an own-property check, not Object.keys: no array of names per measurement.
    for (const field in m) {
      if (!hasOwnField(m, field) || field === metaField) continue;
      const value = m[field];
      if (value === undefined) continue;
      let values = byField.get(field);
      if (values === undefined) {
        values = new Array<unknown>(n);
        byField.set(field, values);
      }
      // Measurements reach the catalog as the copies their validation made: cells keep their values.
      values[i] = value;
    }
  }
  const columns: DeltaColumn[] = [];
  let numCreated = 0;
  for (const [field, values] of byField) {
    if (existingColumns.has(field)) columns.push({ field, created: false, values });
    else numCreated++;
  }
  if (numCreated > 0) {
    for (const [field, values] of byField)
      if (!existingColumns.has(field)) columns.push({ field, created: true, values });
  }
  return {
    firstIndex: input.numPreviouslyCommittedMeasurements,
    count: n,
    columns,
    min: input.minUpdates,
    max: input.maxUpdates,
  };
}

/** The `$set` document of a delta whose names are all path-safe. */
function setDocumentFor(delta: BucketDelta): Record<string, unknown> {
  const $set: Record<string, unknown> = {};
  for (const op of delta.min)
    $set[op.path.length === 0 ? 'control.min' : `control.min.${op.path.join('.')}`] = op.value;
  for (const op of delta.max)
    $set[op.path.length === 0 ? 'control.max' : `control.max.${op.path.join('.')}`] = op.value;
  for (const column of delta.columns) {
    if (column.created) {
      $set[`data.${column.field}`] = columnObject(delta.firstIndex, column.values);
      continue;
    }
    const prefix = `data.${column.field}.`;
    const values = column.values;
    for (let i = 0; i < values.length; i++) {
      if (values[i] !== undefined) $set[prefix + String(delta.firstIndex + i)] = values[i];
    }
  }
  return $set;
}

/**
 * A column's cells as the object stored in `data` (`{"<index>": value}`). A measurement without the
 * field has no cell: `values` holds `undefined` there (a measurement's `undefined` is never a value).
 */
function columnObject(firstIndex: number, values: ReadonlyArray<unknown>): Record<string, unknown> {
  const column: Record<string, unknown> = {};
  for (let i = 0; i < values.length; i++) if (values[i] !== undefined) column[firstIndex + i] = values[i];
  return column;
}

/**
 * Apply a delta to a stored version-1 document in place: the same result as its update document, at the
 * cost of one property store per value.
 *
 * @param doc - the stored document (it matched the commit's guard).
 * @param delta - the commit's changes.
 */
export function applyBucketDelta(doc: Record<string, unknown>, delta: BucketDelta): void {
  const control = doc.control as Record<string, unknown>;
  applyControlSets(control, 'min', delta.min);
  applyControlSets(control, 'max', delta.max);
  const data = doc.data as Record<string, unknown>;
  for (const column of delta.columns) {
    if (column.created) {
      defineField(data, column.field, columnObject(delta.firstIndex, column.values));
      continue;
    }
    const stored = getOwnField(data, column.field) as Record<string, unknown>;
    // Plain loops, not forEach: this runs for every value of every commit. Numeric keys store the cells
    // as the object's elements ("5" and 5 are the same key) without building a string per cell.
    const values = column.values;
    for (let i = 0; i < values.length; i++) {
      if (values[i] !== undefined) stored[delta.firstIndex + i] = values[i];
    }
  }
}

function applyControlSets(
  control: Record<string, unknown>,
  side: 'min' | 'max',
  ops: ReadonlyArray<SetOp>,
): void {
  for (const op of ops) {
    if (op.path.length === 0) {
      defineField(control, side, op.value);
      continue;
    }
    let node = getOwnField(control, side) as Record<string, unknown> | unknown[];
    for (let d = 0; d < op.path.length - 1; d++) {
      const segment = op.path[d] as string;
      let child = Array.isArray(node) ? node[Number(segment)] : getOwnField(node, segment);
      if (typeof child !== 'object' || child === null) {
        child = {};
        if (Array.isArray(node)) node[Number(segment)] = child;
        else defineField(node, segment, child);
      }
      node = child as Record<string, unknown> | unknown[];
    }
    const last = op.path[op.path.length - 1] as string;
    if (Array.isArray(node)) {
      const index = Number(last);
      while (node.length < index) node.push(null);
      node[index] = op.value;
    } else defineField(node, last, op.value);
  }
}

function pathsAreSafe(ops: ReadonlyArray<SetOp>): boolean {
  for (const op of ops) if (!op.path.every(isPathSafeFieldName)) return false;
  return true;
}

function isSortedByName(names: ReadonlyArray<string>): boolean {
  for (let i = 1; i < names.length; i++) if ((names[i - 1] as string) > (names[i] as string)) return false;
  return true;
}

/** The update as a `$setField` pipeline: for names that cannot appear in a dotted path. */
function pipelineFor(delta: BucketDelta): ReadonlyArray<Readonly<Record<string, unknown>>> {
  const ops: Array<{ readonly path: ReadonlyArray<string>; readonly value: unknown }> = [];
  for (const op of delta.min) ops.push({ path: ['control', 'min', ...op.path], value: op.value });
  for (const op of delta.max) ops.push({ path: ['control', 'max', ...op.path], value: op.value });
  for (const column of delta.columns) {
    if (column.created) {
      ops.push({ path: ['data', column.field], value: columnObject(delta.firstIndex, column.values) });
      continue;
    }
    const values = column.values;
    for (let i = 0; i < values.length; i++) {
      if (values[i] !== undefined)
        ops.push({ path: ['data', column.field, String(delta.firstIndex + i)], value: values[i] });
    }
  }
  return ops.map(pipelineStageFor);
}

/** Append the columns of `measurements` (indices from `firstIndex`) to `columns`, in first-appearance order. */
function appendColumns(
  columns: Record<string, Record<string, unknown>>,
  measurements: ReadonlyArray<Measurement>,
  firstIndex: number,
  metaField: string | undefined,
): void {
  for (let i = 0; i < measurements.length; i++) {
    const m = measurements[i] as Measurement;
    const key = firstIndex + i;
    // for-in with an own-property check, not Object.keys: no array of names per call (this runs
    // for every measurement).
    for (const field in m) {
      if (!hasOwnField(m, field)) continue;
      if (field === metaField) continue;
      const value = m[field];
      if (value === undefined) continue;
      let column = getOwnField(columns, field) as Record<string, unknown> | undefined;
      if (column === undefined) {
        column = {};
        defineField(columns, field, column);
      }
      // Measurements reach the catalog as the copies their validation made: cells keep their values.
      column[key] = value;
    }
  }
}

/**
 * A pipeline `$replaceWith` stage setting one (possibly nested) field whose path segments may contain
 * `.` or start with `$`: nested `$setField` with every name and value wrapped in `$literal`.
 */
function pipelineStageFor(op: {
  readonly path: ReadonlyArray<string>;
  readonly value: unknown;
}): Record<string, unknown> {
  return { $replaceWith: setFieldExpr('$$ROOT', op.path, 0, op.value) };
}

function setFieldExpr(input: unknown, path: ReadonlyArray<string>, depth: number, value: unknown): unknown {
  const field = path[depth] as string;
  const inner =
    depth === path.length - 1
      ? { $literal: value }
      : setFieldExpr({ $getField: { field: { $literal: field }, input } }, path, depth + 1, value);
  return { $setField: { field: { $literal: field }, input, value: inner } };
}
