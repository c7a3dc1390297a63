/**
 * Version-1 (uncompressed) bucket documents (INTERNALS §1.3, §1.4, §7): the whole document inserted by a
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

import type { SetOp } from './min-max.js';
import { defineField, getOwnField, isPathSafeFieldName } from '../util/safe-record.js';

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
  appendColumns(data, input.measurements, 0, input.metaField, undefined);
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
 * A MongoDB update for a later commit: either update operators (`{ $set: {...} }`) or, when a field name
 * cannot be written as a dotted path (it contains `.`, starts with `$`, ...), an aggregation pipeline that
 * sets such fields with `$setField`.
 */
export type BucketUpdate = (
  | { readonly kind: 'operators'; readonly update: Readonly<Record<string, unknown>> }
  | { readonly kind: 'pipeline'; readonly update: ReadonlyArray<Readonly<Record<string, unknown>>> }
) & {
  /** Columns this update creates (absent from the stored document before it). */
  readonly newColumns: ReadonlyArray<string>;
};

/**
 * Build the update that turns the stored document into the document with this commit's measurements
 * appended: `$set` of `data.<field>.<index>` for existing columns, of `data.<field>` (the whole new column)
 * for new ones, and of each changed `control.min`/`control.max` path.
 *
 * @param input - the commit's measurements, the stored state and the min/max changes.
 * @returns the update, in operator form unless a field name forces the pipeline form.
 */
export function makeBucketUpdate(input: BucketUpdateInput): BucketUpdate {
  // Fast path (every name path-safe, the usual case): write `$set` keys directly. The per-value work is one
  // string concatenation and one property store; path arrays are only built on the slow path.
  const $set: Record<string, unknown> = {};
  let safe =
    appendControlSets($set, 'control.min.', input.minUpdates) &&
    appendControlSets($set, 'control.max.', input.maxUpdates);
  const newColumns: Record<string, Record<string, unknown>> = {};
  // Safety of each field name, decided once per commit rather than once per value.
  const fieldIsSafe = new Map<string, boolean>();
  const { measurements, metaField, existingColumns } = input;
  for (let i = 0; i < measurements.length && safe; i++) {
    const m = measurements[i] as Measurement;
    const key = String(input.numPreviouslyCommittedMeasurements + i);
    for (const field of Object.keys(m)) {
      if (field === metaField) continue;
      const value = m[field];
      if (value === undefined) continue;
      let ok = fieldIsSafe.get(field);
      if (ok === undefined) {
        ok = isPathSafeFieldName(field);
        fieldIsSafe.set(field, ok);
      }
      if (!ok) {
        safe = false;
        break;
      }
      if (existingColumns.has(field)) {
        $set[`data.${field}.${key}`] = value;
        continue;
      }
      let column = newColumns[field];
      if (column === undefined) {
        column = {};
        newColumns[field] = column;
      }
      column[key] = value;
    }
  }
  // MongoDB applies the fields of one `$set` in name order: several new columns created out of name order
  // would land in a different order than a document built whole, so such a commit uses the pipeline form.
  if (safe && !isSortedByName(Object.keys(newColumns))) safe = false;
  if (safe) {
    // New columns are set whole, after the existing ones, as in a document built whole.
    const created = Object.keys(newColumns);
    for (const field of created) $set[`data.${field}`] = newColumns[field];
    return { kind: 'operators', update: { $set }, newColumns: created };
  }
  return makePipelineUpdate(input);
}

function isSortedByName(names: ReadonlyArray<string>): boolean {
  for (let i = 1; i < names.length; i++) if ((names[i - 1] as string) > (names[i] as string)) return false;
  return true;
}

/** Add `$set` entries for min/max changes; `false` when a path segment is not path-safe. */
function appendControlSets(
  $set: Record<string, unknown>,
  prefix: string,
  ops: ReadonlyArray<SetOp>,
): boolean {
  for (const op of ops) {
    if (op.path.length === 0) {
      $set[prefix.slice(0, -1)] = op.value;
      continue;
    }
    if (!op.path.every(isPathSafeFieldName)) return false;
    $set[prefix + op.path.join('.')] = op.value;
  }
  return true;
}

/** The update as a `$setField` pipeline: for names that cannot appear in a dotted path. */
function makePipelineUpdate(input: BucketUpdateInput): BucketUpdate {
  const ops: Array<{ readonly path: ReadonlyArray<string>; readonly value: unknown }> = [];
  for (const op of input.minUpdates) ops.push({ path: ['control', 'min', ...op.path], value: op.value });
  for (const op of input.maxUpdates) ops.push({ path: ['control', 'max', ...op.path], value: op.value });
  const newColumns: Record<string, Record<string, unknown>> = {};
  appendColumns(
    newColumns,
    input.measurements,
    input.numPreviouslyCommittedMeasurements,
    input.metaField,
    (field, key, value) => {
      ops.push({ path: ['data', field, key], value });
    },
    input.existingColumns,
  );
  const created = Object.keys(newColumns);
  for (const field of created) ops.push({ path: ['data', field], value: getOwnField(newColumns, field) });
  return { kind: 'pipeline', update: ops.map(pipelineStageFor), newColumns: created };
}

/**
 * Append the columns of `measurements` (indices starting at `firstIndex`) to `columns`.
 *
 * With `existing` given, values of fields in `existing` are reported to `onExisting` instead of being
 * added to `columns` (a later commit writes them one by one).
 */
function appendColumns(
  columns: Record<string, Record<string, unknown>>,
  measurements: ReadonlyArray<Measurement>,
  firstIndex: number,
  metaField: string | undefined,
  onExisting: ((field: string, key: string, value: unknown) => void) | undefined,
  existing?: ReadonlySet<string>,
): void {
  for (let i = 0; i < measurements.length; i++) {
    const m = measurements[i] as Measurement;
    const key = String(firstIndex + i);
    for (const field of Object.keys(m)) {
      if (field === metaField) continue;
      const value = m[field];
      if (value === undefined) continue;
      if (onExisting !== undefined && existing?.has(field) === true) {
        onExisting(field, key, value);
        continue;
      }
      let column = getOwnField(columns, field) as Record<string, unknown> | undefined;
      if (column === undefined) {
        column = {};
        defineField(columns, field, column);
      }
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
