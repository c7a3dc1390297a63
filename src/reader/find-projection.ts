/**
 * `find` projections on measurements: which fields the unpacker must build, and what is left to do on
 * each measurement after the event filter (the server unpacks with an include or exclude field set).
 *
 * Top-level inclusions and exclusions become the unpacker's field selection, so excluded columns are never
 * read. Fields needed only by the event filter or the sort are unpacked too and removed afterwards.
 * Projections with dotted paths or operators are applied with mingo after a full unpack.
 *
 * @packageDocumentation
 */
import { Aggregator } from 'mingo/aggregator';

import { TimeseriesError } from '../errors.js';
import type { FieldSelection, MeasurementDocument } from './bucket-unpacker.js';
import { isFieldSelected } from './bucket-unpacker.js';
import type { FieldDependencies } from './field-dependencies.js';
import { bsonNumberValue, isPlainObject } from '../util/bson-value.js';
import { defineField, hasOwnField } from '../util/safe-record.js';
import { mingoValue } from '../util/mingo-values.js';
import { kMingoOptions, mingoCall, toMongoError } from '../util/query-validation.js';

/** A `find` projection as given by the user. */
export type ProjectionSpec = Readonly<Record<string, unknown>>;

/** What to do to each measurement after filtering. */
export type PostProjection =
  /** Nothing: the unpacked document is the result. */
  | { readonly kind: 'none' }
  /** Keep only the fields the selection keeps (drops fields unpacked for the filter or the sort). */
  | { readonly kind: 'select'; readonly selection: FieldSelection }
  /** Apply a general projection with mingo. */
  | { readonly kind: 'mingo'; readonly aggregator: Aggregator };

/** The unpacker selection and the post-filter step of a projection. */
export interface ProjectionPlan {
  /** Fields to unpack. */
  readonly unpack: FieldSelection;
  /** Step applied to each matching measurement. */
  readonly post: PostProjection;
}

function isTruthyFlag(v: unknown): boolean | undefined {
  if (v === 1 || v === true) return true;
  if (v === 0 || v === false) return false;
  if (typeof v === 'number') return v !== 0;
  return undefined;
}

/**
 * The projection with its flags given as js-bson numbers (`Int32(1)`, `Double(0)`: what relaxed-false
 * EJSON or an unpromoted BSON read gives) as JS numbers, at the top level and in nested-document syntax,
 * as the server reads any numeric flag; expressions (objects whose first field starts with `$`) are kept.
 * A `find` projection and an aggregation's `$project` alike.
 *
 * @param spec - the projection.
 * @returns `spec` itself when it has no such flag, else a copy.
 */
export function numericFlags(spec: ProjectionSpec): ProjectionSpec {
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(spec)) {
    const value = spec[key];
    const first = isPlainObject(value) ? Object.keys(value)[0] : undefined;
    let flag: unknown = value;
    if (isPlainObject(value) && first !== undefined && !first.startsWith('$')) flag = numericFlags(value);
    else if (typeof value === 'object' && value !== null) flag = bsonNumberValue(value) ?? value;
    if (flag !== value && out === undefined) {
      out = {};
      for (const before of Object.keys(spec)) {
        if (before === key) break;
        defineField(out, before, spec[before]);
      }
    }
    if (out !== undefined) defineField(out, key, flag);
  }
  return out ?? spec;
}

/** The top-level selection of a simple projection, or `undefined` when the projection is not simple. */
function simpleSelection(spec: ProjectionSpec): FieldSelection | undefined {
  const include = new Set<string>();
  const exclude = new Set<string>();
  let idFlag: boolean | undefined;
  for (const key of Object.keys(spec)) {
    const flag = isTruthyFlag(spec[key]);
    if (flag === undefined || key.includes('.') || key.startsWith('$')) return undefined;
    if (key === '_id') idFlag = flag;
    else if (flag) include.add(key);
    else exclude.add(key);
  }
  if (include.size > 0 && exclude.size > 0) {
    const [field] = exclude;
    throw new TimeseriesError(
      'BadValue',
      `Cannot do exclusion on field ${String(field)} in inclusion projection`,
    );
  }
  if (include.size > 0 || idFlag === true) {
    if (idFlag !== false) include.add('_id');
    return { kind: 'include', fields: include };
  }
  if (idFlag === false) exclude.add('_id');
  return exclude.size === 0 ? { kind: 'all' } : { kind: 'exclude', fields: exclude };
}

/**
 * Plan a projection.
 *
 * @param given - the user's projection, or `undefined`.
 * @param needed - fields the event filter and the sort read.
 * @returns the unpack selection and the post-filter step.
 * @throws {@link TimeseriesError} `BadValue` for a projection mixing inclusion and exclusion.
 */
export function planProjection(given: ProjectionSpec | undefined, needed: FieldDependencies): ProjectionPlan {
  const spec = given === undefined ? undefined : numericFlags(given);
  const selection = spec === undefined ? ({ kind: 'all' } as const) : simpleSelection(spec);
  if (selection === undefined) {
    return {
      unpack: { kind: 'all' },
      post: {
        kind: 'mingo',
        aggregator: mingoCall(() => new Aggregator([{ $project: spec }], kMingoOptions)),
      },
    };
  }
  if (selection.kind === 'all') return { unpack: selection, post: { kind: 'none' } };
  if (needed === 'all') return { unpack: { kind: 'all' }, post: { kind: 'select', selection } };
  let extra = false;
  if (selection.kind === 'include') {
    const fields = new Set(selection.fields);
    for (const f of needed) {
      if (!fields.has(f)) {
        fields.add(f);
        extra = true;
      }
    }
    return {
      unpack: { kind: 'include', fields },
      post: extra ? { kind: 'select', selection } : { kind: 'none' },
    };
  }
  const fields = new Set(selection.fields);
  for (const f of needed) extra = fields.delete(f) || extra;
  return {
    unpack: { kind: 'exclude', fields },
    post: extra ? { kind: 'select', selection } : { kind: 'none' },
  };
}

/**
 * Apply the post-filter step to one measurement.
 *
 * @param post - from {@link planProjection}.
 * @param doc - the unpacked, matching measurement (may be returned as is).
 * @returns the projected measurement.
 */
export function applyPostProjection(post: PostProjection, doc: MeasurementDocument): MeasurementDocument {
  switch (post.kind) {
    case 'none':
      return doc;
    case 'select': {
      const out: MeasurementDocument = {};
      for (const key of Object.keys(doc))
        if (isFieldSelected(post.selection, key)) defineField(out, key, doc[key]);
      return out;
    }
    case 'mingo':
      try {
        // mingo sees the numbers as the driver promotes them (mingo-values); a field the projection
        // passes through keeps its BSON type (inInputOrder).
        return inInputOrder(doc, post.aggregator.run([mingoValue(doc)])[0] ?? {}) as MeasurementDocument;
      } catch (error) {
        // mingo's untyped errors (an invalid projection) become MongoDB's.
        throw toMongoError(error);
      }
    default: {
      const never: never = post;
      return never;
    }
  }
}

/**
 * `projected` with its fields in the order of `input`, in sub-documents too, then any computed field in the
 * order the projection gave: MongoDB projects by iterating over the input document, while mingo's `$project`
 * emits the fields in the order of the specification. A number equal to the input's value promoted for
 * mingo is the input's value (a `Double` or `Long` passed through keeps its type).
 */
function inInputOrder(input: unknown, projected: unknown): unknown {
  if (Array.isArray(input) && Array.isArray(projected)) {
    return projected.map((value, i) => inInputOrder(input[i], value));
  }
  if (typeof projected === 'number' && input !== projected && mingoValue(input) === projected) return input;
  if (!isPlainObject(input) || !isPlainObject(projected)) return projected;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(input)) {
    if (hasOwnField(projected, key)) defineField(out, key, inInputOrder(input[key], projected[key]));
  }
  for (const key of Object.keys(projected)) if (!hasOwnField(out, key)) defineField(out, key, projected[key]);
  return out;
}
