/**
 * MongoDB's `Schema` (`bucket_catalog/flat_bson.cpp`, INTERNALS §4): the canonical type recorded at every
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

/** The kind of a {@link SchemaNode}; see the table in this module's documentation. */
export type SchemaNodeKind = 'unset' | 'value' | 'object' | 'array';

/** One path of the schema tree. Internal state, exported for tests. */
export interface SchemaNode {
  /** What was recorded at this path. */
  kind: SchemaNodeKind;
  /** BSON type byte of the first scalar recorded here; 0 (EOO) for containers, as on the server. */
  type: number;
  /** Fields of an `object` node by name (a `Map`: names are untrusted); `null` until needed. */
  fields: Map<string, SchemaNode> | null;
  /** Positions of an `array` node; `null` until needed. */
  elements: SchemaNode[] | null;
}

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

function newNode(): SchemaNode {
  return { kind: 'unset', type: 0, fields: null, elements: null };
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
  const root = newNode();
  root.kind = 'object';
  return { root };
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
  const fields = (node.fields ??= new Map<string, SchemaNode>());
  for (const name of Object.keys(doc)) {
    const value = doc[name];
    if (value === undefined || name === skipField) continue;
    let child = fields.get(name);
    if (child === undefined) {
      child = newNode();
      fields.set(name, child);
    }
    if (!updateNode(child, value)) return false;
  }
  return true;
}

function updateNode(node: SchemaNode, value: unknown): boolean {
  const type = bsonTypeOf(value);
  if (type === BsonType.object) {
    if (node.kind === 'unset') node.kind = 'object';
    else if (node.kind !== 'object') return false;
    // A js-bson DBRef is written as the embedded document {$ref, $id, $db?, ...fields}.
    const doc =
      (value as { _bsontype?: unknown })._bsontype === 'DBRef'
        ? dbRefToDocument(value as DBRef)
        : (value as Readonly<Record<string, unknown>>);
    return updateObject(node, doc, undefined);
  }
  if (type === BsonType.array) {
    if (node.kind === 'unset') node.kind = 'array';
    else if (node.kind !== 'array') return false;
    const arr = value as ReadonlyArray<unknown>;
    const elements = (node.elements ??= []);
    for (let i = 0; i < arr.length; i++) {
      if (i === elements.length) elements.push(newNode());
      // js-bson writes an undefined element (or a hole) as null.
      if (!updateNode(elements[i] as SchemaNode, arr[i] ?? null)) return false;
    }
    return true;
  }
  if (node.kind === 'unset') {
    node.kind = 'value';
    node.type = type;
    return true;
  }
  // Containers keep type 0 (EOO): see the quirk in the module documentation.
  return canonicalTypeOfBsonType(type) === canonicalTypeOfBsonType(node.type);
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
