/**
 * Fast paths for the two operations every commit performs on an embedded bucket: checking the commit's
 * guard (`{_id, "data.<time>.<n>": {$exists: ...}}`) and applying its `$set` of dotted paths.
 *
 * Both are what mingo does for these shapes, without compiling a query or an update per commit (the
 * profile of an ingest showed mingo's compilation as the largest cost after garbage collection). Any
 * other shape is refused (`undefined` / `'refused'`) and the caller falls back to mingo.
 *
 * @packageDocumentation
 */
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';

const kIndex = /^(?:0|[1-9][0-9]*)$/;

/**
 * Evaluate a filter made only of `{<path>: {$exists: <boolean>}}` conditions (besides `_id`, already
 * matched by the caller) on plain sub-objects.
 *
 * @param doc - the document.
 * @param filter - the filter.
 * @returns whether it matches, or `undefined` when the filter has another shape.
 */
export function matchExistsFilter(
  doc: Readonly<Record<string, unknown>>,
  filter: Readonly<Record<string, unknown>>,
): boolean | undefined {
  for (const path of Object.keys(filter)) {
    if (path === '_id') continue;
    const condition = filter[path];
    if (typeof condition !== 'object' || condition === null) return undefined;
    const keys = Object.keys(condition);
    const wanted = (condition as { $exists?: unknown }).$exists;
    if (keys.length !== 1 || typeof wanted !== 'boolean') return undefined;
    let node: unknown = doc;
    let exists = true;
    for (const segment of path.split('.')) {
      if (Array.isArray(node)) return undefined;
      if (typeof node !== 'object' || node === null || !hasOwnField(node, segment)) {
        exists = false;
        break;
      }
      node = getOwnField(node, segment);
    }
    if (exists !== wanted) return false;
  }
  return true;
}

/**
 * Apply `{ $set: { "<dotted.path>": value, ... } }` in place, creating missing sub-objects, setting array
 * elements by index (padding with `null`, as MongoDB does).
 *
 * @param doc - the document, mutated.
 * @param update - the update.
 * @returns `'refused'` (nothing changed) when the update has another shape or a path crosses a scalar;
 *   else whether a `meta` path was set.
 */
export function applySetUpdate(
  doc: Record<string, unknown>,
  update: Readonly<Record<string, unknown>>,
): SetUpdateOutcome {
  const keys = Object.keys(update);
  if (keys.length !== 1 || keys[0] !== '$set') return 'refused';
  const $set = update.$set;
  if (typeof $set !== 'object' || $set === null) return 'refused';
  const paths = Object.keys($set);
  // Validate every path first so that a refused update changes nothing. Paths are walked by index, not
  // split: this runs once per value of every commit.
  let touchesMeta = false;
  for (const path of paths) {
    if (walk(doc, path, undefined) === 'refused') return 'refused';
    if (path.startsWith('meta') && (path.length === 4 || path.charCodeAt(4) === 46)) touchesMeta = true;
  }
  for (const path of paths) walk(doc, path, { value: ($set as Record<string, unknown>)[path] });
  return touchesMeta ? 'appliedToMeta' : 'applied';
}

/** Outcome of {@link applySetUpdate}: refused (nothing changed), or applied and whether `meta` changed. */
export type SetUpdateOutcome = 'refused' | 'applied' | 'appliedToMeta';

/**
 * Walk `path` from `root`. Without `assign`, only check that the path can be set (`'ok'`/`'refused'`); with
 * it, create missing objects and store the value.
 */
function walk(
  root: Record<string, unknown>,
  path: string,
  assign: { readonly value: unknown } | undefined,
): 'ok' | 'refused' {
  let node: unknown = root;
  let start = 0;
  for (;;) {
    const dot = path.indexOf('.', start);
    const segment = dot === -1 ? path.slice(start) : path.slice(start, dot);
    const last = dot === -1;
    if (Array.isArray(node)) {
      if (!kIndex.test(segment)) return 'refused';
      const index = Number(segment);
      if (assign === undefined) {
        if (last) return 'ok';
        node = node[index];
        if (node === undefined) return 'ok';
      } else {
        while (node.length < index) node.push(null);
        if (last) {
          node[index] = assign.value;
          return 'ok';
        }
        if (typeof node[index] !== 'object' || node[index] === null) node[index] = {};
        node = node[index];
      }
    } else if (typeof node === 'object' && node !== null) {
      const obj = node as Record<string, unknown>;
      if (last) {
        if (assign !== undefined) defineField(obj, segment, assign.value);
        return 'ok';
      }
      // Own properties only: `__proto__` and inherited names are ordinary missing fields here.
      let child = Object.hasOwn(obj, segment) ? obj[segment] : undefined;
      if (child === undefined) {
        if (assign === undefined) return 'ok';
        child = {};
        defineField(obj, segment, child);
      }
      node = child;
    } else {
      return 'refused';
    }
    start = dot + 1;
  }
}
