/**
 * The schema of an interleaved section (docs/bsoncolumn.md §1.6): the reference object walked depth-first,
 * with one stream per scalar leaf, and the rebuilding of one entry from the leaves' values.
 *
 * @packageDocumentation
 */
import { defineField } from '../../util/safe-record.js';
import { BsonType, invalidColumn, kInterleavedStartLegacy } from './bsoncolumn-util.js';
import { decodeUtf8, elementValueSize } from './bson-element.js';

/** A sub-object (object or array) of the reference, or a scalar leaf. */
export interface SchemaNode {
  /** Field name in the reference ("0", "1", ... inside arrays). */
  readonly name: string;
  /** Stream index for a leaf; -1 for a sub-object. */
  readonly stream: number;
  /** `true` when this sub-object is an array (output as a JS array). */
  readonly isArray: boolean;
  /** Children of a sub-object, in reference order. */
  readonly children: ReadonlyArray<SchemaNode>;
}

/** One leaf of the reference: where its element value is, to initialise its stream (§1.6 step 3). */
export interface SchemaLeaf {
  /** BSON type of the reference value. */
  readonly type: number;
  /** First byte of the value. */
  readonly pos: number;
  /** Value size. */
  readonly size: number;
}

/** The parsed reference object. */
export interface InterleavedSchema {
  /** The root (object for `F0`/`F1`, array for `F2`). */
  readonly root: SchemaNode;
  /** Leaves in stream order. */
  readonly leaves: ReadonlyArray<SchemaLeaf>;
  /** Size in bytes of the reference document. */
  readonly size: number;
}

/**
 * Parse the reference document that follows an interleaved start byte.
 *
 * @param bytes - column bytes.
 * @param view - view over `bytes`.
 * @param pos - first byte of the reference document.
 * @param end - end of the column.
 * @param startByte - `0xF0`, `0xF1` or `0xF2`.
 * @returns the schema.
 * @throws TimeseriesError when the reference is malformed or has no leaf.
 */
export function parseReference(
  bytes: Uint8Array,
  view: DataView,
  pos: number,
  end: number,
  startByte: number,
): InterleavedSchema {
  const size = elementValueSize(bytes, view, BsonType.object, pos, end);
  const leaves: SchemaLeaf[] = [];
  const descendArrays = startByte !== kInterleavedStartLegacy;
  const root = parseDocument(bytes, view, pos, '', startByte === 0xf2, descendArrays, leaves, 0);
  if (leaves.length === 0)
    throw invalidColumn(`interleaved reference object without scalar fields at offset ${pos}`);
  return { root, leaves, size };
}

/** Nesting limit: BSON documents are at most 16 MB, and the server limits depth too. */
const kMaxDepth = 200;

function parseDocument(
  bytes: Uint8Array,
  view: DataView,
  pos: number,
  name: string,
  isArray: boolean,
  descendArrays: boolean,
  leaves: SchemaLeaf[],
  depth: number,
): SchemaNode {
  if (depth > kMaxDepth) throw invalidColumn('interleaved reference object nested too deeply');
  const docEnd = pos + view.getInt32(pos, true) - 1;
  const children: SchemaNode[] = [];
  let p = pos + 4;
  while (p < docEnd) {
    const type = bytes[p] ?? 0;
    const nameEnd = bytes.indexOf(0, p + 1);
    if (nameEnd < 0 || nameEnd >= docEnd)
      throw invalidColumn(`bad field name in reference object at offset ${p}`);
    const fieldName = decodeUtf8(bytes, p + 1, nameEnd);
    const valuePos = nameEnd + 1;
    const size = elementValueSize(bytes, view, type, valuePos, docEnd);
    if (type === BsonType.object || (type === BsonType.array && descendArrays)) {
      children.push(
        parseDocument(
          bytes,
          view,
          valuePos,
          fieldName,
          type === BsonType.array,
          descendArrays,
          leaves,
          depth + 1,
        ),
      );
    } else {
      children.push({ name: fieldName, stream: leaves.length, isArray: false, children: [] });
      leaves.push({ type, pos: valuePos, size });
    }
    p = valuePos + size;
  }
  if (p !== docEnd) throw invalidColumn(`reference object fields overrun at offset ${p}`);
  return { name, stream: -1, isArray, children };
}

/**
 * Build one entry from its leaves' values (§1.6 step 5).
 *
 * @param node - a sub-object node.
 * @param values - per stream, the value or `undefined` for missing.
 * @returns the object or array, or `undefined` when nothing was written in it (and it is not empty in the
 *   reference).
 */
export function buildEntry(node: SchemaNode, values: ReadonlyArray<unknown>): unknown {
  const children = node.children;
  if (children.length === 0) return node.isArray ? [] : {};
  let written = false;
  if (node.isArray) {
    const out: unknown[] = [];
    for (const child of children) {
      const v = child.stream >= 0 ? values[child.stream] : buildEntry(child, values);
      if (v !== undefined) {
        out.push(v);
        written = true;
      }
    }
    return written ? out : undefined;
  }
  const out = {};
  for (const child of children) {
    const v = child.stream >= 0 ? values[child.stream] : buildEntry(child, values);
    if (v !== undefined) {
      defineField(out, child.name, v);
      written = true;
    }
  }
  return written ? out : undefined;
}
