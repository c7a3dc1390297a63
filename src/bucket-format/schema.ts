/**
 * MongoDB's `Schema` (`bucket_catalog/flat_bson.cpp`, docs/mongodb-behaviour.md §4): the canonical type recorded at every
 * path of an open bucket, used to send a measurement whose types conflict with the bucket's to a new
 * bucket ("schema change" rollover, 5.2+).
 *
 * ## Node kinds
 *
 * | from \ incoming | scalar `v`                                          | object                     | array                              |
 * |-----------------|-----------------------------------------------------|----------------------------|------------------------------------|
 * | `unset`         | → `value` (records v's type): compatible            | → `object`, recurse         | → `array`, recurse positionally    |
 * | `value` t       | compatible iff canon(v) = canon(t)                  | incompatible               | incompatible                       |
 * | `object`        | compatible iff canon(v) = 0 (quirk, see below)      | recurse                    | incompatible                       |
 * | `array`         | compatible iff canon(v) = 0 (quirk)                 | incompatible               | recurse positionally               |
 *
 * Canonical types make all number widths compatible with each other, and strings with symbols. New
 * paths are recorded while checking (the server updates in place); missing paths are compatible. On
 * `'incompatible'` the schema may be partly updated: the caller discards it and builds a new one for the
 * new bucket, as the server does.
 *
 * Quirk kept from the server: a container node's recorded scalar type is the default EOO, whose canonical
 * type (0) equals BSON `undefined`'s, so `undefined` after an object or array is not flagged. It cannot
 * happen from JavaScript — js-bson has no BSON-undefined value and JS `undefined` means "missing" — but
 * the table above is what the code implements.
 *
 * @packageDocumentation
 */

import type { DBRef } from 'bson';
import { BsonType, bsonTypeOf, canonicalTypeOfBsonType, dbRefToDocument } from '../util/bson-value.js';
import { hasOwnField } from '../util/safe-record.js';

/** The kind of a {@link SchemaNode}: only containers are nodes (see {@link SchemaEntry}). */
export type SchemaNodeKind = 'object' | 'array';

/** A container path of the schema tree. Internal state, exported for tests. */
export interface SchemaNode {
  /** What was recorded at this path. */
  readonly kind: SchemaNodeKind;
  /** Fields of an `object` node by name (a `Map`: names are untrusted); `null` for arrays. */
  readonly fields: Map<string, SchemaEntry> | null;
  /** Positions of an `array` node; `null` for objects. */
  readonly elements: SchemaEntry[] | null;
}

/**
 * What the schema recorded at one path: the BSON type byte of its first scalar (the table's `value`
 * kind), or a container node. A path not recorded yet (`unset`) has no entry. Scalars are plain numbers,
 * not nodes: they are most paths, and an open bucket keeps its schema as long as it is open.
 */
export type SchemaEntry = number | SchemaNode;

/** A bucket's schema. Create with {@link createSchema}; the root is an object. */
export interface Schema {
  /** The root (the measurement document). */
  readonly root: SchemaNode;
}

/** Outcome of {@link updateSchema}. */
export type SchemaUpdateResult = 'compatible' | 'incompatible';

/** Options of {@link updateSchema}. */
export interface SchemaUpdateOptions {
  /**
   * A top-level field to leave out (the collection's metaField).
   * @defaultValue `undefined` (nothing skipped)
   */
  readonly skipField?: string | undefined;
}

/** Outcome of {@link schemaFromDocuments}. */
export type SchemaFromDocumentsResult =
  | { readonly kind: 'ok'; readonly schema: Schema }
  /** The stored bucket mixes types at some path (a pre-5.2 "mixed-schema" bucket): it cannot be reopened. */
  | { readonly kind: 'mixed-schema'; readonly document: 'min' | 'max' };

function newContainer(kind: SchemaNodeKind): SchemaNode {
  return kind === 'object'
    ? { kind, fields: new Map(), elements: null }
    : { kind, fields: null, elements: [] };
}

/**
 * Create an empty schema (root: an object with no fields).
 *
 * @returns a fresh schema.
 * @example
 * ```ts
 * const schema = createSchema();
 * updateSchema(schema, { t: new Date(), x: 1 }); // 'compatible'
 * updateSchema(schema, { t: new Date(), x: 'one' }); // 'incompatible': roll over to a new bucket
 * ```
 */
export function createSchema(): Schema {
  return { root: newContainer('object') };
}

/**
 * Check a measurement against the schema and record its new paths (the server's `Schema::update`).
 *
 * @param schema - the bucket's schema; updated in place (partly, when incompatible).
 * @param measurement - a measurement document.
 * @param options - `skipField`: top-level field to ignore (the metaField).
 * @returns `'compatible'`, or `'incompatible'` when some path has a different canonical type.
 * @throws {@link TimeseriesError} `BadValue` for values js-bson cannot write.
 */
export function updateSchema(
  schema: Schema,
  measurement: Readonly<Record<string, unknown>>,
  options: SchemaUpdateOptions = {},
): SchemaUpdateResult {
  return updateObject(schema.root, measurement, options.skipField) ? 'compatible' : 'incompatible';
}

/** Returns `false` at the first incompatible path (the server stops there too). */
function updateObject(
  node: SchemaNode,
  doc: Readonly<Record<string, unknown>>,
  skipField: string | undefined,
): boolean {
  const fields = node.fields as Map<string, SchemaEntry>;
  // for-in with an own-property check, not Object.keys: no array of names per call (this runs
  // for every measurement).
  for (const name in doc) {
    if (!hasOwnField(doc, name)) continue;
    const value = doc[name];
    if (value === undefined || name === skipField) continue;
    const entry = fields.get(name);
    const updated = updateEntry(entry, value);
    if (updated === false) return false;
    if (updated !== entry) fields.set(name, updated);
  }
  return true;
}

/** The fields of a value of BSON type object: a js-bson DBRef is written as {$ref, $id, $db?, ...fields}. */
function embeddedDocument(value: unknown): Readonly<Record<string, unknown>> {
  return (value as { _bsontype?: unknown })._bsontype === 'DBRef'
    ? dbRefToDocument(value as DBRef)
    : (value as Readonly<Record<string, unknown>>);
}

/**
 * Check `value` against a path's entry (`undefined`: unset) and record it: returns the path's entry
 * afterwards (a new one when it was unset), or `false` when the value is incompatible.
 */
function updateEntry(entry: SchemaEntry | undefined, value: unknown): SchemaEntry | false {
  const type = bsonTypeOf(value);
  if (type === BsonType.object) {
    const node = entry ?? newContainer('object');
    if (typeof node === 'number' || node.kind !== 'object') return false;
    return updateObject(node, embeddedDocument(value), undefined) && node;
  }
  if (type === BsonType.array) {
    const node = entry ?? newContainer('array');
    if (typeof node === 'number' || node.kind !== 'array') return false;
    const arr = value as ReadonlyArray<unknown>;
    const elements = node.elements as SchemaEntry[];
    for (let i = 0; i < arr.length; i++) {
      // js-bson writes an undefined element (or a hole) as null.
      const updated = updateEntry(elements[i], arr[i] ?? null);
      if (updated === false) return false;
      elements[i] = updated;
    }
    return node;
  }
  if (entry === undefined) return type;
  // Containers keep type 0 (EOO): see the quirk in the module documentation.
  const recorded = typeof entry === 'number' ? entry : 0;
  return canonicalTypeOfBsonType(type) === canonicalTypeOfBsonType(recorded) && entry;
}

/**
 * What {@link updateSchema} would do with `measurement`, without changing `schema`: whether every path is
 * recorded already with a compatible type (`'unchanged'`), the first path not compatible comes before any
 * path to record (`'incompatible'`: updateSchema would record nothing either), or a path would be
 * recorded (`'record'`: update a copy to learn the rest). For a schema several buckets share.
 *
 * @param schema - the schema.
 * @param measurement - the incoming measurement.
 * @param options - `skipField`: a top-level field to ignore (the metaField).
 * @returns the outcome.
 */
export function checkSchema(
  schema: Schema,
  measurement: Readonly<Record<string, unknown>>,
  options: SchemaUpdateOptions = {},
): 'unchanged' | 'record' | 'incompatible' {
  const outcome = checkObject(schema.root, measurement, options.skipField);
  return outcome === kUnchanged ? 'unchanged' : outcome === kRecord ? 'record' : 'incompatible';
}

const kUnchanged = 0;
const kRecord = 1;
const kIncompatible = 2;

function checkObject(
  node: SchemaNode,
  doc: Readonly<Record<string, unknown>>,
  skipField: string | undefined,
): number {
  const fields = node.fields as Map<string, SchemaEntry>;
  for (const name in doc) {
    if (!hasOwnField(doc, name)) continue;
    const value = doc[name];
    if (value === undefined || name === skipField) continue;
    const outcome = checkEntry(fields.get(name), value);
    if (outcome !== kUnchanged) return outcome;
  }
  return kUnchanged;
}

/** {@link updateEntry} without recording: the same decisions, in the same order. */
function checkEntry(entry: SchemaEntry | undefined, value: unknown): number {
  const type = bsonTypeOf(value);
  if (type === BsonType.object || type === BsonType.array) {
    if (entry === undefined) return kRecord;
    if (typeof entry === 'number' || entry.kind !== (type === BsonType.object ? 'object' : 'array')) {
      return kIncompatible;
    }
    if (type === BsonType.object) return checkObject(entry, embeddedDocument(value), undefined);
    const arr = value as ReadonlyArray<unknown>;
    const elements = entry.elements as SchemaEntry[];
    for (let i = 0; i < arr.length; i++) {
      const outcome = checkEntry(elements[i], arr[i] ?? null);
      if (outcome !== kUnchanged) return outcome;
    }
    return kUnchanged;
  }
  if (entry === undefined) return kRecord;
  const recorded = typeof entry === 'number' ? entry : 0;
  return canonicalTypeOfBsonType(type) === canonicalTypeOfBsonType(recorded) ? kUnchanged : kIncompatible;
}

/**
 * Whether the schema a new bucket would build from `measurement` alone equals `schema` (see
 * {@link sameSchema}), answered without building it, for a `schema` of top-level scalars only: the
 * measurement has exactly its fields (besides `skipField` and undefined values), each a scalar of the
 * same canonical type. A collection's buckets mostly start alike; building a schema to compare and drop
 * it cost a map per new bucket. `false` for a schema with containers (then build and compare).
 *
 * @param schema - a schema (a collection's last).
 * @param measurement - a new bucket's first measurement.
 * @param skipField - a top-level field to ignore (the metaField).
 * @returns `true` when the measurement's own schema would equal `schema`.
 */
export function startsFlatSchema(
  schema: Schema,
  measurement: Readonly<Record<string, unknown>>,
  skipField: string | undefined,
): boolean {
  const fields = schema.root.fields as Map<string, SchemaEntry>;
  let count = 0;
  for (const name in measurement) {
    if (!hasOwnField(measurement, name)) continue;
    const value = measurement[name];
    if (value === undefined || name === skipField) continue;
    const entry = fields.get(name);
    if (typeof entry !== 'number') return false;
    // A container's canonical type is never a scalar's: an object or array value fails here.
    if (canonicalTypeOfBsonType(bsonTypeOf(value)) !== canonicalTypeOfBsonType(entry)) return false;
    count++;
  }
  return count === fields.size;
}

/**
 * A copy of `schema` that can be updated without changing it.
 *
 * @param schema - the schema.
 * @returns the copy.
 */
export function cloneSchema(schema: Schema): Schema {
  return { root: cloneNode(schema.root) };
}

function cloneEntry(entry: SchemaEntry): SchemaEntry {
  return typeof entry === 'number' ? entry : cloneNode(entry);
}

function cloneNode(node: SchemaNode): SchemaNode {
  if (node.kind === 'object') {
    const fields = new Map<string, SchemaEntry>();
    for (const [name, entry] of node.fields as Map<string, SchemaEntry>) fields.set(name, cloneEntry(entry));
    return { kind: 'object', fields, elements: null };
  }
  return { kind: 'array', fields: null, elements: (node.elements as SchemaEntry[]).map(cloneEntry) };
}

/**
 * Whether two schemas record the same canonical types at the same paths (whatever the order they were
 * recorded in): what one accepts the other does.
 *
 * @param a - a schema.
 * @param b - another.
 * @returns `true` when they are equal.
 */
export function sameSchema(a: Schema, b: Schema): boolean {
  return sameEntry(a.root, b.root);
}

function sameEntry(a: SchemaEntry | undefined, b: SchemaEntry | undefined): boolean {
  if (typeof a === 'number' && typeof b === 'number') {
    return canonicalTypeOfBsonType(a) === canonicalTypeOfBsonType(b);
  }
  if (typeof a !== 'object' || typeof b !== 'object') return a === b;
  if (a.kind !== b.kind) return false;
  if (a.kind === 'array') {
    const x = a.elements as SchemaEntry[];
    const y = b.elements as SchemaEntry[];
    return x.length === y.length && x.every((entry, i) => sameEntry(entry, y[i]));
  }
  const x = a.fields as Map<string, SchemaEntry>;
  const y = b.fields as Map<string, SchemaEntry>;
  if (x.size !== y.size) return false;
  for (const [name, entry] of x) if (!sameEntry(entry, y.get(name))) return false;
  return true;
}

/**
 * Rebuild a schema from a stored bucket's `control.min` and then `control.max` (the server's
 * `Schema::parseFromBSON`, used when reopening a bucket).
 *
 * @param min - stored `control.min`.
 * @param max - stored `control.max`.
 * @returns `{ kind: 'ok', schema }`, or `{ kind: 'mixed-schema', document }` naming the document whose
 * fold failed (the server fails the reopening with `BadValue` "Failed to update min/max").
 * @throws {@link TimeseriesError} `BadValue` for values js-bson cannot write.
 */
export function schemaFromDocuments(
  min: Readonly<Record<string, unknown>>,
  max: Readonly<Record<string, unknown>>,
): SchemaFromDocumentsResult {
  const schema = createSchema();
  if (!updateObject(schema.root, min, undefined)) return { kind: 'mixed-schema', document: 'min' };
  if (!updateObject(schema.root, max, undefined)) return { kind: 'mixed-schema', document: 'max' };
  return { kind: 'ok', schema };
}
