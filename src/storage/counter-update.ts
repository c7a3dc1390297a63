/**
 * Counter updates in structured form: what an update document of `$setOnInsert`, `$inc`, `$min` and
 * `$max` over dotted paths says, with each path already split into field names and array indexes. The
 * rollups write their counters this way (one update per touched slot or period and commit):
 *
 * - a storage that applies documents in place (`MemoryStorage`, through {@link Storage.applyCounters})
 *   walks the split paths directly, without building an update document and parsing it again;
 * - any other storage receives {@link counterUpdateDocument}: the MongoDB update document, as documented.
 *
 * The callers cache the paths (they repeat from one commit to the next), so a commit allocates its values
 * only.
 *
 * @packageDocumentation
 */
import { compareBsonValues } from '../util/bson-value.js';
import { defineField } from '../util/safe-record.js';

/** A path into a document, split: field names (strings) and array indexes (numbers). */
export type FieldPath = ReadonlyArray<string | number>;

/** The operator of one path: MongoDB's `$inc`, `$min` or `$max`. */
export type CounterOperator = '$inc' | '$min' | '$max';

/**
 * A counter update. `paths[i]` gets `operators[i]` with `values[i]`; an `undefined` value leaves its
 * path out (a no-op). Paths are distinct and none is a prefix of another (as MongoDB requires of the
 * paths of one update).
 */
export interface CounterUpdate {
  /** Top-level fields set when the update inserts the document (`$setOnInsert`). */
  readonly setOnInsert?: Readonly<Record<string, unknown>>;
  /** The paths (usually cached by the caller and shared between updates). */
  readonly paths: ReadonlyArray<FieldPath>;
  /** The operator of each path. */
  readonly operators: ReadonlyArray<CounterOperator>;
  /** The value of each path (numbers for `$inc`); `undefined` leaves the path out. */
  readonly values: ReadonlyArray<unknown>;
}

/** Operator fields of the update document, in the order they are written. */
const kDocumentOperators: ReadonlyArray<CounterOperator> = ['$inc', '$min', '$max'];

/**
 * The MongoDB update document of a counter update: `$setOnInsert` (when given), then `$inc`, `$min` and
 * `$max` (each when it has a path), each listing its dotted paths in the update's order.
 *
 * @param update - the counter update.
 * @returns the update document.
 * @example
 * ```ts
 * counterUpdateDocument({ paths: [['count'], ['days', 3, 'count']], operators: ['$inc', '$inc'], values: [2, 2] });
 * // { $inc: { count: 2, 'days.3.count': 2 } }
 * ```
 */
export function counterUpdateDocument(update: CounterUpdate): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  if (update.setOnInsert !== undefined) doc.$setOnInsert = { ...update.setOnInsert };
  for (const op of kDocumentOperators) {
    let fields: Record<string, unknown> | undefined;
    for (let i = 0; i < update.paths.length; i++) {
      const value = update.values[i];
      if (update.operators[i] !== op || value === undefined) continue;
      fields ??= {};
      defineField(fields, (update.paths[i] as FieldPath).join('.'), value);
    }
    if (fields !== undefined) doc[op] = fields;
  }
  return doc;
}

/** A parent reached by a path: the object or array holding its last segment. */
type Parent = Record<string, unknown> | unknown[];

/**
 * The parents found by the checking pass, reused by every call (the application is synchronous, so no
 * two calls share it at once): an update allocates nothing beyond the sub-documents it creates.
 */
const scratchParents: Array<Parent | undefined> = [];

/**
 * Apply a counter update in place, with MongoDB's semantics: `$inc` adds to a number or creates it,
 * `$min`/`$max` replace a value that orders higher/lower (BSON order) or create it, missing
 * sub-documents are created; `setOnInsert` applies when `inserting`. Every path is checked before anything
 * changes: a path that crosses a scalar, an array by a name or past its end, a field name that is empty
 * or starts with `$`, or an `$inc` of a value that is not a number is `'refused'` with nothing changed
 * (the caller then applies {@link counterUpdateDocument} through its general path, which reports
 * MongoDB's error where there is one).
 *
 * @param doc - the document, mutated.
 * @param update - the counter update.
 * @param inserting - whether the document is being inserted.
 * @returns `'applied'` or `'refused'`.
 */
export function applyCounterUpdate(
  doc: Record<string, unknown>,
  update: CounterUpdate,
  inserting: 'inserting' | 'updating',
): 'applied' | 'refused' {
  const { paths, operators, values } = update;
  const n = paths.length;
  // The parent of the previous path checked: consecutive paths often share it (a node's counters).
  let previous: FieldPath | undefined;
  let previousParent: Parent | undefined;
  for (let i = 0; i < n; i++) {
    const value = values[i];
    if (value === undefined) continue;
    if (operators[i] === '$inc' && typeof value !== 'number') return refuse();
    const path = paths[i] as FieldPath;
    const parent =
      previousParent !== undefined && sameParent(previous as FieldPath, path)
        ? previousParent
        : parentOf(doc, path, 'check');
    if (parent === 'refused') return refuse();
    previous = path;
    if (parent === 'missing') {
      previousParent = undefined;
      scratchParents[i] = undefined;
      continue;
    }
    previousParent = parent;
    const current = valueAt(parent, path[path.length - 1] as string | number);
    if (current === kRefused) return refuse();
    if (operators[i] === '$inc' && current !== undefined && typeof current !== 'number') return refuse();
    scratchParents[i] = parent;
  }
  if (inserting === 'inserting' && update.setOnInsert !== undefined) {
    for (const key of Object.keys(update.setOnInsert)) defineField(doc, key, update.setOnInsert[key]);
  }
  for (let i = 0; i < n; i++) {
    const value = values[i];
    if (value === undefined) continue;
    const path = paths[i] as FieldPath;
    const parent = scratchParents[i] ?? (parentOf(doc, path, 'create') as Parent);
    scratchParents[i] = undefined;
    const key = path[path.length - 1] as string | number;
    const current = valueAt(parent, key);
    const next = counterValue(operators[i] as CounterOperator, current, value);
    if (typeof key === 'number') (parent as unknown[])[key] = next;
    else defineField(parent, key, next);
  }
  return 'applied';
}

/**
 * The value a counter operator leaves at a path (MongoDB's semantics): `$inc` adds to a number or
 * creates it, `$min`/`$max` keep whichever of the two orders lower/higher (BSON order) or create it.
 *
 * @param op - the operator.
 * @param current - the value at the path (`undefined` when absent; a number for `$inc`, checked before).
 * @param value - the operator's value (a number for `$inc`).
 * @returns the new value.
 */
export function counterValue(op: CounterOperator, current: unknown, value: unknown): unknown {
  switch (op) {
    case '$inc':
      return current === undefined ? value : (current as number) + (value as number);
    case '$min':
      return current === undefined || orders(value, current) < 0 ? value : current;
    case '$max':
      return current === undefined || orders(value, current) > 0 ? value : current;
    default: {
      const never: never = op;
      throw new TypeError(`unknown counter operator ${String(never)}`);
    }
  }
}

/** Whether two paths have the same parent path (all segments but the last equal). */
function sameParent(a: FieldPath, b: FieldPath): boolean {
  if (a.length !== b.length) return false;
  for (let s = a.length - 2; s >= 0; s--) if (a[s] !== b[s]) return false;
  return true;
}

/** Refuse, letting go of the parents checked so far. */
function refuse(): 'refused' {
  scratchParents.length = 0;
  return 'refused';
}

/** BSON order of two values; numbers (not NaN: BSON orders it below every number) compared directly. */
function orders(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number' && a === a && b === b) return a < b ? -1 : a > b ? 1 : 0;
  return compareBsonValues(a, b);
}

/** Marks a last segment that cannot be written (see {@link valueAt}). */
const kRefused: unique symbol = Symbol('refused');

/**
 * The value under the last segment of a path in its parent: `undefined` when absent, {@link kRefused}
 * when the segment cannot be written there (an index into an object or past an array's end, a name into
 * an array, an empty or `$`-prefixed name).
 */
function valueAt(parent: Parent, key: string | number): unknown {
  if (Array.isArray(parent)) {
    if (typeof key !== 'number' || key >= parent.length) return kRefused;
    return parent[key];
  }
  if (typeof key !== 'string' || key.length === 0 || key.startsWith('$')) return kRefused;
  return Object.hasOwn(parent, key) ? parent[key] : undefined;
}

/**
 * The object or array holding the last segment of `path`. `'check'` creates nothing and answers
 * `'missing'` when a sub-document on the way is absent (the update will create it); `'create'` creates
 * missing sub-documents. `'refused'` when the path crosses a scalar, an array by a name or a missing
 * element, or an object by an index or an empty or `$`-prefixed name.
 */
function parentOf(
  doc: Record<string, unknown>,
  path: FieldPath,
  mode: 'check' | 'create',
): Parent | 'missing' | 'refused' {
  let node: Parent = doc;
  const last = path.length - 1;
  for (let s = 0; s < last; s++) {
    const segment = path[s] as string | number;
    let child: unknown;
    if (Array.isArray(node)) {
      if (typeof segment !== 'number') return 'refused';
      child = node[segment];
      if (typeof child !== 'object' || child === null || isBsonValueObject(child)) return 'refused';
    } else {
      if (typeof segment !== 'string' || segment.length === 0 || segment.startsWith('$')) return 'refused';
      const next = subDocumentOf(node, segment, mode);
      if (next === 'missing' || next === 'refused') return next;
      child = next;
    }
    node = child as Parent;
  }
  return node;
}

/**
 * The sub-document a path walks into at `node[name]`: made when absent under `'create'`, `'missing'` when
 * absent under `'check'`, `'refused'` when the field holds a scalar (a Date or js-bson value included).
 *
 * @param node - the document holding the field.
 * @param name - the field name (checked by the caller).
 * @param mode - whether to create a missing sub-document.
 * @returns the sub-document, or why there is none to walk into.
 */
export function subDocumentOf(
  node: Record<string, unknown>,
  name: string,
  mode: 'check' | 'create',
): object | 'missing' | 'refused' {
  const child = Object.hasOwn(node, name) ? node[name] : undefined;
  if (child === undefined) {
    if (mode === 'check') return 'missing';
    const created = {};
    defineField(node, name, created);
    return created;
  }
  return typeof child !== 'object' || child === null || isBsonValueObject(child) ? 'refused' : child;
}

/**
 * A Date or js-bson value: a scalar to MongoDB, not a document to walk into.
 *
 * @param v - an object met on a path.
 * @returns whether a path must not walk into it.
 */
export function isBsonValueObject(v: object): boolean {
  return v instanceof Date || '_bsontype' in v;
}
