/**
 * Which top-level measurement fields a filter, a sort or an aggregation pipeline reads (the server's
 * `DepsTracker`), so that the unpacker builds only those fields. Answers `'all'` whenever the analysis is
 * not certain (`$$ROOT`, `$where`, unknown stages, a pipeline that outputs whole documents).
 *
 * @packageDocumentation
 */
import { bsonNumberValue, isPlainObject } from '../util/bson-value.js';
import { defineField } from '../util/safe-record.js';

/** A set of top-level field names, or every field. */
export type FieldDependencies = ReadonlySet<string> | 'all';

function topLevel(path: string): string {
  const dot = path.indexOf('.');
  return dot === -1 ? path : path.slice(0, dot);
}

/**
 * Add the fields referenced by an aggregation expression (`"$a.b"` strings; `$$ROOT`/`$$CURRENT` mean
 * every field; other `$$variables` none).
 *
 * @returns `false` when every field is needed.
 */
function addExpressionRefs(expr: unknown, out: Set<string>): boolean {
  if (typeof expr === 'string') {
    if (expr.startsWith('$$')) {
      return !(
        expr === '$$ROOT' ||
        expr === '$$CURRENT' ||
        expr.startsWith('$$ROOT.') ||
        expr.startsWith('$$CURRENT.')
      );
    }
    if (expr.startsWith('$') && expr.length > 1) out.add(topLevel(expr.slice(1)));
    return true;
  }
  if (Array.isArray(expr)) {
    for (const e of expr) if (!addExpressionRefs(e, out)) return false;
    return true;
  }
  if (isPlainObject(expr)) {
    for (const key of Object.keys(expr)) {
      if (key === '$literal') continue;
      if (key === '$getField') {
        if (!addGetFieldRefs(expr[key], out)) return false;
        continue;
      }
      if (kSortByAccumulators.has(key)) {
        if (!addSortByRefs(expr[key], out)) return false;
        continue;
      }
      // They build documents from field names given as plain strings: assume every field.
      if (key === '$setField' || key === '$unsetField') return false;
      if (!addExpressionRefs(expr[key], out)) return false;
    }
  }
  return true;
}

/** The accumulators that name the fields they sort by as plain strings (`sortBy: {ts: -1}`). */
const kSortByAccumulators: ReadonlySet<string> = new Set(['$top', '$bottom', '$topN', '$bottomN']);

/** The fields a `$top`-like accumulator reads: its `sortBy` keys, and those of its other expressions. */
function addSortByRefs(arg: unknown, out: Set<string>): boolean {
  if (!isPlainObject(arg)) return false;
  for (const key of Object.keys(arg)) {
    const value = arg[key];
    if (key !== 'sortBy') {
      if (!addExpressionRefs(value, out)) return false;
      continue;
    }
    if (!isPlainObject(value)) return false;
    for (const field of Object.keys(value)) out.add(topLevel(field));
  }
  return true;
}

/**
 * `$getField` names its field as a plain string, not a `$path`: `{$getField: 'v'}` (MongoDB 5.0+ shorthand)
 * or `{$getField: {field: 'v'}}` read field `v` of `$$CURRENT` (a literal name: `a.b` is a field named
 * "a.b"); with `input`, the field is read from that expression's value. A computed name needs every field.
 */
function addGetFieldRefs(arg: unknown, out: Set<string>): boolean {
  if (typeof arg === 'string') {
    if (arg.startsWith('$')) return false;
    out.add(arg);
    return true;
  }
  if (!isPlainObject(arg)) return false;
  const field = arg.field;
  if (arg.input !== undefined) return addExpressionRefs(arg.input, out) && addExpressionRefs(field, out);
  const name = isPlainObject(field) && Object.keys(field).length === 1 ? field.$literal : field;
  if (typeof name !== 'string' || (name === field && name.startsWith('$'))) return false;
  out.add(name);
  return true;
}

/** Add the fields read by a query filter; `false` when every field is needed. */
function addFilterRefs(filter: unknown, out: Set<string>): boolean {
  if (!isPlainObject(filter)) return false;
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value)) return false;
      for (const child of value) if (!addFilterRefs(child, out)) return false;
    } else if (key === '$expr') {
      if (!addExpressionRefs(value, out)) return false;
    } else if (key === '$comment') {
      continue;
    } else if (key.startsWith('$')) {
      return false;
    } else {
      out.add(topLevel(key));
    }
  }
  return true;
}

/**
 * The top-level fields a query filter reads.
 *
 * @param filter - a MongoDB filter.
 * @returns the fields, or `'all'` (`$where`, `$text`, `$jsonSchema`, `$$ROOT` in `$expr`...).
 */
export function filterDependencies(filter: Readonly<Record<string, unknown>>): FieldDependencies {
  const out = new Set<string>();
  return addFilterRefs(filter, out) ? out : 'all';
}

/**
 * A `$project` specification with its nested-document syntax spelled as dotted paths (`{a: {b: 1}}` is
 * `{'a.b': 1}`, as MongoDB reads it); an object whose first field starts with `$` is an expression, kept.
 */
function flatProjection(
  spec: Record<string, unknown>,
  prefix = '',
  out: Record<string, unknown> = {},
): Record<string, unknown> {
  for (const key of Object.keys(spec)) {
    const value = spec[key];
    const first = isPlainObject(value) ? Object.keys(value)[0] : undefined;
    if (isPlainObject(value) && first !== undefined && !first.startsWith('$')) {
      flatProjection(value, `${prefix}${key}.`, out);
    } else defineField(out, `${prefix}${key}`, value);
  }
  return out;
}

/**
 * How a `$project` reads a value: a flag (`true`, `false`, or any number, of any numeric type: zero
 * excludes, any other includes) or an expression.
 */
function projectionFlag(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  const n = bsonNumberValue(v);
  return n === undefined ? undefined : n !== 0;
}

/** Whether a `$project` specification is an inclusion (or computes fields), hence replaces documents. */
function isInclusionProjection(spec: Record<string, unknown>): boolean {
  for (const key of Object.keys(spec)) {
    if (key === '_id') continue;
    return projectionFlag(spec[key]) !== false;
  }
  // Only `_id` listed: `{_id: 0}` is an exclusion, `{_id: 1}` an inclusion.
  return projectionFlag(spec._id) !== false;
}

/**
 * The top-level measurement fields an aggregation pipeline reads from its input documents.
 *
 * @param pipeline - the stages (after any pushed-down leading `$match`).
 * @returns the fields, or `'all'` when the pipeline may output or read whole documents.
 */
export function pipelineDependencies(
  pipeline: ReadonlyArray<Readonly<Record<string, unknown>>>,
): FieldDependencies {
  const out = new Set<string>();
  for (const stage of pipeline) {
    const name = Object.keys(stage)[0];
    const arg = name === undefined ? undefined : stage[name];
    switch (name) {
      case '$match':
        if (!addFilterRefs(arg, out)) return 'all';
        break;
      case '$sort':
        if (!isPlainObject(arg)) return 'all';
        for (const key of Object.keys(arg)) out.add(topLevel(key));
        break;
      case '$limit':
      case '$skip':
      case '$unset':
        break;
      case '$addFields':
      case '$set':
      case '$unwind':
        if (!addExpressionRefs(arg, out)) return 'all';
        break;
      case '$project': {
        if (!isPlainObject(arg)) return 'all';
        const spec = flatProjection(arg);
        if (!isInclusionProjection(spec)) break;
        if (projectionFlag(spec._id) !== false) out.add('_id');
        for (const key of Object.keys(spec)) {
          const v = spec[key];
          const flag = projectionFlag(v);
          if (flag === true) out.add(topLevel(key));
          else if (flag === undefined && !addExpressionRefs(v, out)) return 'all';
        }
        // An inclusion projection replaces the documents: later stages read only its output.
        return out;
      }
      case '$group':
      case '$bucket':
      case '$bucketAuto':
      case '$sortByCount':
      case '$replaceRoot':
      case '$replaceWith':
        return addExpressionRefs(arg, out) ? out : 'all';
      case '$count':
        return out;
      case '$facet': {
        if (!isPlainObject(arg)) return 'all';
        for (const key of Object.keys(arg)) {
          const sub = arg[key];
          if (!Array.isArray(sub)) return 'all';
          const deps = pipelineDependencies(sub as ReadonlyArray<Readonly<Record<string, unknown>>>);
          if (deps === 'all') return 'all';
          for (const f of deps) out.add(f);
        }
        return out;
      }
      default:
        return 'all';
    }
  }
  // The pipeline outputs its input documents whole.
  return 'all';
}

/**
 * Union of two dependency sets.
 *
 * @param a - first.
 * @param b - second.
 * @returns the union.
 */
export function unionDependencies(a: FieldDependencies, b: FieldDependencies): FieldDependencies {
  if (a === 'all' || b === 'all') return 'all';
  return new Set([...a, ...b]);
}
