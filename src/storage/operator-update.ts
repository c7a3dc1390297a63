/**
 * A fast path for the update operators rollups send ( `$inc`, `$min`, `$max`, `$set`, `$setOnInsert`)
 * with dotted paths through documents and array indexes, applied in place with MongoDB's semantics:
 * `$inc` adds to a number or creates it, `$min`/`$max` replace when the new value orders lower/higher
 * (BSON order) or create it. Every path is checked before anything changes; any other shape, or a path
 * that crosses a scalar or a missing array element, is refused and the caller falls back to mingo
 * (which then reports MongoDB's error where there is one).
 *
 * Mingo compiles each update it applies: at one update per touched slot and commit, that compilation was
 * most of a rollup's ingest cost.
 *
 * @packageDocumentation
 */
import { defineField } from '../util/safe-record.js';
import { counterValue, subDocumentOf } from './counter-update.js';

const kIndex = /^(?:0|[1-9][0-9]*)$/u;

/** The operators handled. */
const kOperators: ReadonlySet<string> = new Set(['$inc', '$min', '$max', '$set', '$setOnInsert']);

/**
 * Apply an operator update in place.
 *
 * @param doc - the document, mutated.
 * @param update - the update document.
 * @param inserting - whether the document is being inserted (`$setOnInsert` applies only then).
 * @returns `'applied'`, or `'refused'` (nothing changed) for a shape this path does not handle.
 */
export function applyOperatorUpdate(
  doc: Record<string, unknown>,
  update: Readonly<Record<string, unknown>>,
  inserting: 'inserting' | 'updating',
): 'applied' | 'refused' {
  const ops = Object.keys(update);
  // First pass: check every operator, path and current value without changing anything, keeping the
  // parent of each path that exists already (most do: a counter document is created once).
  const parents: Array<Record<string, unknown> | unknown[] | undefined> = [];
  for (const op of ops) {
    if (!kOperators.has(op)) return 'refused';
    const fields = update[op];
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) return 'refused';
    for (const path of Object.keys(fields)) {
      const value = (fields as Record<string, unknown>)[path];
      if (op === '$inc' && typeof value !== 'number') return 'refused';
      const parent = parentOf(doc, path, 'check');
      if (parent === 'refused') return 'refused';
      if (parent === 'missing') {
        parents.push(undefined);
        continue;
      }
      const key = lastSegment(path);
      if (!writableKey(parent, key)) return 'refused';
      const current = valueIn(parent, key);
      if (op === '$inc' && current !== undefined && typeof current !== 'number') return 'refused';
      parents.push(parent);
    }
  }
  let p = 0;
  for (const op of ops) {
    const fields = update[op] as Record<string, unknown>;
    const skip = op === '$setOnInsert' && inserting === 'updating';
    for (const path of Object.keys(fields)) {
      const checked = parents[p++];
      if (skip) continue;
      const value = fields[path];
      const parent = checked ?? (parentOf(doc, path, 'create') as Record<string, unknown> | unknown[]);
      const key = lastSegment(path);
      const next =
        op === '$inc' || op === '$min' || op === '$max'
          ? counterValue(op, valueIn(parent, key), value)
          : value;
      setIn(parent, key, next);
    }
  }
  return 'applied';
}

/** A document or an array holding the last segment of a dotted path. */
export type PathParent = Record<string, unknown> | unknown[];

/**
 * The last segment of a dotted path.
 *
 * @param path - the path.
 * @returns the field name or array index after its last dot.
 */
export function lastSegment(path: string): string {
  return path.slice(path.lastIndexOf('.') + 1);
}

/**
 * Whether an update may write `key` in `parent`: an index within an array, or a non-empty name that does
 * not start with `$` in a document.
 *
 * @param parent - the array or document.
 * @param key - the last segment of a path.
 * @returns whether it is writable.
 */
export function writableKey(parent: PathParent, key: string): boolean {
  if (Array.isArray(parent)) return kIndex.test(key) && Number(key) < parent.length;
  return key.length > 0 && !key.startsWith('$');
}

/**
 * The value under `key` in `parent`.
 *
 * @param parent - the array or document.
 * @param key - an index or a field name.
 * @returns the value, `undefined` when absent.
 */
export function valueIn(parent: PathParent, key: string): unknown {
  if (Array.isArray(parent)) return parent[Number(key)];
  return Object.hasOwn(parent, key) ? parent[key] : undefined;
}

/**
 * Write `value` under `key` in `parent` (an own field, even for `__proto__`).
 *
 * @param parent - the array or document.
 * @param key - an index or a field name.
 * @param value - the value.
 */
export function setIn(parent: PathParent, key: string, value: unknown): void {
  if (Array.isArray(parent)) parent[Number(key)] = value;
  else defineField(parent, key, value);
}

/**
 * The object or array holding the last segment of `path`. `'check'` creates nothing and answers
 * `'missing'` when a sub-document on the way is absent (the update will create it); `'create'` creates
 * missing sub-documents. `'refused'` when the path crosses a scalar, an array by a non-index, or a
 * missing array element.
 *
 * @param doc - the document.
 * @param path - a dotted path.
 * @param mode - whether to create the missing sub-documents.
 * @returns the parent, or why there is none.
 */
export function parentOf(
  doc: Record<string, unknown>,
  path: string,
  mode: 'check' | 'create',
): Record<string, unknown> | unknown[] | 'missing' | 'refused' {
  let node: Record<string, unknown> | unknown[] = doc;
  let start = 0;
  for (;;) {
    const dot = path.indexOf('.', start);
    if (dot === -1) return node;
    const segment = path.slice(start, dot);
    if (segment.length === 0 || segment.startsWith('$')) return 'refused';
    let child: unknown;
    if (Array.isArray(node)) {
      if (!kIndex.test(segment)) return 'refused';
      child = node[Number(segment)];
      if (typeof child !== 'object' || child === null) return 'refused';
    } else {
      const next = subDocumentOf(node, segment, mode);
      if (next === 'missing' || next === 'refused') return next;
      child = next;
    }
    node = child as Record<string, unknown> | unknown[];
    start = dot + 1;
  }
}
