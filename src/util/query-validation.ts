/**
 * Query filters and pipelines checked before they run, with MongoDB's codes and messages (the parser in
 * `matcher/expression_parser.cpp`, the limits of `bson/bson_depth.h`, stage lookup in
 * `pipeline/document_source.cpp`), and errors thrown by `mingo` turned into typed errors.
 *
 * Without these checks a string filter is parsed by mingo character by character, a filter nested a few
 * thousand levels overflows the stack, and an unknown operator surfaces as mingo's untyped `Error`.
 *
 * | input                                                       | code           |
 * | ----------------------------------------------------------- | -------------- |
 * | filter, stage or option not a document / pipeline not array | `TypeMismatch` |
 * | value nested deeper than 200 levels                          | `Overflow`     |
 * | circular value                                               | `BadValue`     |
 * | unknown operator, malformed `$and`/`$in`/`$not`...           | `BadValue`     |
 * | `$regex` pattern that does not compile                       | 51091          |
 * | `$where` in a read filter or a `$match`                      | `BadValue`     |
 * | `$where` in an update or delete filter                       | `InvalidOptions` |
 * | stage with more than one field / unknown stage name         | 40323 / 40324  |
 * | malformed `$group`, `$sort`, `$count`, `$unwind` (pipeline-stages.ts) | the server's |
 * | undefined `$$` variable in an expression (from mingo)        | 17276          |
 *
 * `$where` runs JavaScript, and tsbuckets runs none: MongoDB refuses it on a time-series collection
 * (its reads are a `$match` over the buckets, where the parser allows no JavaScript), so tsbuckets refuses
 * it in every filter, the buckets view's too, with MongoDB's answer for the context. mingo, which
 * evaluates what tsbuckets does not compile itself, runs with scripts disabled ({@link kMingoOptions}), so
 * a `$where`, `$function` or `$accumulator` that reaches it is refused too; except for a pipeline, which
 * {@link checkPipeline} has searched for them at every depth (in a `$facet` or `$lookup` sub-pipeline
 * too), because mingo's `$setWindowFields` needs scripts for its own windows.
 *
 * @packageDocumentation
 */
import { TimeseriesError, TsBucketsError } from '../errors.js';
import { describe } from './bson-validation.js';
import { kMingoContext } from './mingo-pipeline.js';
import { checkStageSpec } from './pipeline-stages.js';
import { bsonNumberValue, bsonTypeOf, isPlainObject } from './bson-value.js';
import type { SortSpec } from './bson-query.js';
import { defineField, hasOwnField } from './safe-record.js';

/**
 * Options given to every mingo `Query` and to a find projection's `Aggregator`: no JavaScript (`$where`,
 * `$function`, `$accumulator`), as tsbuckets runs no server-side script. Pipelines, searched for these
 * operators first, run with mingo-pipeline.ts's options instead.
 */
export const kMingoOptions: Readonly<{ scriptEnabled: false; context: typeof kMingoContext }> = Object.freeze(
  {
    scriptEnabled: false,
    context: kMingoContext,
  },
);

/** The operators that run JavaScript. */
const kScriptOperators: ReadonlySet<string> = new Set(['$where', '$function', '$accumulator']);

/**
 * Refuse an argument that names an operator running JavaScript, for the arguments handed to a storage
 * that may evaluate them with its own mingo (the buckets view's projection). Checks the nesting first.
 *
 * @param value - the argument.
 * @throws {@link TimeseriesError} `BadValue` "<operator> is not allowed in this context", or what
 *   {@link checkNesting} throws.
 */
export function checkNoScript(value: unknown): void {
  checkNesting(value);
  refuseScripts(value);
}

function refuseScripts(value: unknown): void {
  if (Array.isArray(value)) {
    for (const element of value as unknown[]) refuseScripts(element);
    return;
  }
  if (!isPlainObject(value)) return;
  for (const key in value) {
    if (!hasOwnField(value, key)) continue;
    if (kScriptOperators.has(key)) throw badValue(`${key} is not allowed in this context`);
    refuseScripts(value[key]);
  }
}

/**
 * Where a filter is used, which decides MongoDB's answer to `$where`: `'read'` (find, count, `$match`,
 * the buckets view) or `'write'` (the query of an update or a delete).
 */
export type FilterContext = 'read' | 'write';

/** The deepest a BSON object may be nested in a command (`BSONDepth::kDefaultMaxAllowableDepth`). */
export const kMaxAllowableDepth = 200;

/** Top-level operators of a filter (each followed by what it needs). */
const kTopLevelOperators: ReadonlySet<string> = new Set([
  '$and',
  '$or',
  '$nor',
  '$expr',
  '$where',
  '$comment',
  '$jsonSchema',
  '$text',
  '$sampleRate',
  '$alwaysTrue',
  '$alwaysFalse',
]);

/** Operators on a field (`{ field: { $op: ... } }`). */
const kFieldOperators: ReadonlySet<string> = new Set([
  '$eq',
  '$ne',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$exists',
  '$type',
  '$size',
  '$all',
  '$elemMatch',
  '$not',
  '$regex',
  '$options',
  '$mod',
  '$bitsAllSet',
  '$bitsAllClear',
  '$bitsAnySet',
  '$bitsAnyClear',
  '$geoWithin',
  '$geoIntersects',
  '$within',
  '$near',
  '$nearSphere',
  '$maxDistance',
  '$minDistance',
  '$_internalExprEq',
  '$_internalExprGt',
  '$_internalExprGte',
  '$_internalExprLt',
  '$_internalExprLte',
]);

/** Aggregation stages MongoDB knows (a stage it knows but the embedded engine cannot run fails later). */
const kPipelineStages: ReadonlySet<string> = new Set([
  '$addFields',
  '$bucket',
  '$bucketAuto',
  '$count',
  '$densify',
  '$documents',
  '$facet',
  '$fill',
  '$geoNear',
  '$graphLookup',
  '$group',
  '$limit',
  '$lookup',
  '$match',
  '$merge',
  '$out',
  '$project',
  '$redact',
  '$replaceRoot',
  '$replaceWith',
  '$sample',
  '$set',
  '$setWindowFields',
  '$skip',
  '$sort',
  '$sortByCount',
  '$unionWith',
  '$unset',
  '$unwind',
]);

/**
 * The BSON type name MongoDB prints for a value in "wrong type" messages.
 *
 * @param value - any value.
 * @returns e.g. `string`, `int`, `array`, `missing`; {@link describe} for values BSON cannot hold.
 */
export function bsonTypeName(value: unknown): string {
  if (value === undefined) return 'missing';
  if (isPlainObject(value)) return 'object';
  try {
    switch (bsonTypeOf(value)) {
      case 1:
        return 'double';
      case 2:
        return 'string';
      case 3:
        return 'object';
      case 4:
        return 'array';
      case 5:
        return 'binData';
      case 7:
        return 'objectId';
      case 8:
        return 'bool';
      case 9:
        return 'date';
      case 10:
        return 'null';
      case 11:
        return 'regex';
      case 16:
        return 'int';
      case 18:
        return 'long';
      case 19:
        return 'decimal';
      default:
        return describe(value);
    }
  } catch {
    return describe(value);
  }
}

/**
 * MongoDB's IDL error for an argument of the wrong type.
 *
 * @param field - the argument, as MongoDB names it (`find.filter`, `insert.ordered`...).
 * @param value - what was given.
 * @param expected - the expected BSON type name (`object`, `array`, `bool`...).
 * @returns a `TypeMismatch` error.
 */
export function wrongType(field: string, value: unknown, expected: string): TimeseriesError {
  return new TimeseriesError(
    'TypeMismatch',
    `BSON field '${field}' is the wrong type '${bsonTypeName(value)}', expected type '${expected}'`,
    { field },
  );
}

/**
 * Check that `value` is no deeper than {@link kMaxAllowableDepth} and holds no cycle, without recursing
 * past that depth (a deeper value would overflow the stack of every later walk).
 *
 * @param value - a filter, a pipeline, an update or one of their values.
 * @param depth - its level (1: a top-level document).
 * @param path - the containers above it (cycle detection).
 * @throws {@link TimeseriesError} `Overflow` or `BadValue` (circular).
 */
export function checkNesting(value: unknown, depth = 1, path: object[] = []): void {
  if (typeof value !== 'object' || value === null) return;
  const isArray = Array.isArray(value);
  if (!isArray && !isPlainObject(value)) return;
  if (depth > kMaxAllowableDepth) {
    throw new TimeseriesError(
      'Overflow',
      `BSONObj exceeded maximum nested object depth: ${kMaxAllowableDepth}`,
    );
  }
  if (path.includes(value))
    throw new TimeseriesError('BadValue', 'Cannot convert circular structure to BSON');
  path.push(value);
  if (isArray) for (const element of value) checkNesting(element, depth + 1, path);
  else for (const key in value) if (hasOwnField(value, key)) checkNesting(value[key], depth + 1, path);
  path.pop();
}

/**
 * Check a query filter: a document, nested within the limits, every operator known and well formed.
 *
 * @param filter - the filter as given.
 * @param field - the argument's name in messages (`find.filter`...).
 * @param context - where the filter is used (MongoDB's answer to `$where` depends on it).
 * @defaultValue context `'read'`
 * @throws {@link TimeseriesError} as listed in the module comment.
 * @example
 * ```ts
 * checkFilter({ v: { $foo: 1 } }, 'find.filter'); // BadValue "unknown operator: $foo"
 * checkFilter({ $where: 'true' }, 'find.filter'); // BadValue "$where is not allowed in this context"
 * ```
 */
export function checkFilter(
  filter: unknown,
  field: string,
  context: FilterContext = 'read',
): asserts filter is Readonly<Record<string, unknown>> {
  if (!isPlainObject(filter)) throw wrongType(field, filter, 'object');
  checkNesting(filter);
  checkExpression(filter, 0, context);
}

function badValue(message: string): TimeseriesError {
  return new TimeseriesError('BadValue', message);
}

/**
 * Check the operators of a filter. `level` is the depth of the expression tree; it needs no limit of its
 * own here: every level nests the filter two BSON levels deeper, so {@link checkNesting} stops a tree long
 * before the server's 100 levels of operators.
 */
function checkExpression(
  filter: Readonly<Record<string, unknown>>,
  level: number,
  context: FilterContext,
): void {
  for (const name in filter) {
    if (!hasOwnField(filter, name)) continue;
    const value = filter[name];
    if (name.startsWith('$')) checkTopLevelOperator(name, value, level, context);
    else checkFieldValue(value, level, context);
  }
}

/** MongoDB's refusal of `$where` (see the module comment). */
function whereRefusal(context: FilterContext): TimeseriesError {
  switch (context) {
    case 'read':
      return badValue('$where is not allowed in this context');
    case 'write':
      return new TimeseriesError(
        'InvalidOptions',
        'Cannot use $where when performing an update or delete on a time-series collection',
      );
    default: {
      const never: never = context;
      return badValue(`unknown filter context ${String(never)}`);
    }
  }
}

function checkTopLevelOperator(name: string, value: unknown, level: number, context: FilterContext): void {
  if (!kTopLevelOperators.has(name) && !name.startsWith('$_internal')) {
    throw badValue(
      `unknown top level operator: ${name}. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.`,
    );
  }
  switch (name) {
    case '$and':
    case '$or':
    case '$nor': {
      if (!Array.isArray(value) || value.length === 0) throw badValue(`${name} must be a nonempty array`);
      for (const entry of value as unknown[]) {
        if (!isPlainObject(entry)) throw badValue(`${name} argument's entries must be objects`);
        checkExpression(entry, level + 1, context);
      }
      return;
    }
    case '$where':
      throw whereRefusal(context);
    case '$jsonSchema':
      if (!isPlainObject(value)) throw wrongType('$jsonSchema', value, 'object');
      return;
    default:
      return;
  }
}

/** The value of a field in a filter: an operator document, or a value to compare with. */
function checkFieldValue(value: unknown, level: number, context: FilterContext): void {
  if (!isOperatorDocument(value)) return;
  checkOperators(value, level, context);
}

/** Whether a document is read as operators: its first field is `$`-prefixed (as the server decides). */
function isOperatorDocument(value: unknown): value is Readonly<Record<string, unknown>> {
  if (!isPlainObject(value)) return false;
  for (const key in value) if (hasOwnField(value, key)) return key.startsWith('$');
  return false;
}

function checkOperators(ops: Readonly<Record<string, unknown>>, level: number, context: FilterContext): void {
  for (const op in ops) {
    if (!hasOwnField(ops, op)) continue;
    if (!kFieldOperators.has(op)) throw badValue(`unknown operator: ${op}`);
    const arg = ops[op];
    switch (op) {
      case '$in':
      case '$nin':
      case '$all':
        if (!Array.isArray(arg)) throw badValue(`${op} needs an array`);
        break;
      case '$not':
        if (isPlainObject(arg)) {
          if (Object.keys(arg).length === 0) throw badValue('$not cannot be empty');
          if (!isOperatorDocument(arg)) throw badValue('$not needs a regex or a document');
          checkOperators(arg, level + 1, context);
        } else if (!isRegex(arg)) {
          throw badValue('$not needs a regex or a document');
        }
        break;
      case '$elemMatch':
        if (!isPlainObject(arg)) throw badValue('$elemMatch needs an Object');
        if (isOperatorDocument(arg) && !hasTopLevelOperator(arg)) checkOperators(arg, level + 1, context);
        else checkExpression(arg, level + 1, context);
        break;
      case '$mod':
        if (!Array.isArray(arg)) throw badValue('malformed mod, needs to be an array');
        if (arg.length !== 2) throw badValue('malformed mod, not enough elements');
        break;
      case '$regex':
        if (typeof arg === 'string') checkPattern(arg);
        else if (!isRegex(arg)) throw badValue('$regex has to be a string');
        break;
      case '$size':
        if (typeof arg !== 'number' && typeof arg !== 'bigint' && !hasBsonTag(arg)) {
          throw badValue('$size needs a number');
        }
        break;
      default:
        break;
    }
  }
}

/** A `$regex` pattern JavaScript can compile (the server's PCRE and JS differ at the edges). */
function checkPattern(pattern: string): void {
  try {
    new RegExp(pattern);
  } catch (cause) {
    const reason = cause instanceof Error ? cause.message : describe(cause);
    throw new TimeseriesError('Location51091', `Regular expression is invalid: ${reason}`, { cause });
  }
}

function hasTopLevelOperator(doc: Readonly<Record<string, unknown>>): boolean {
  for (const key in doc) if (hasOwnField(doc, key) && kTopLevelOperators.has(key)) return true;
  return false;
}

function hasBsonTag(v: unknown): boolean {
  return typeof v === 'object' && v !== null && typeof (v as { _bsontype?: unknown })._bsontype === 'string';
}

function isRegex(v: unknown): boolean {
  return v instanceof RegExp || (hasBsonTag(v) && (v as { _bsontype: string })._bsontype === 'BSONRegExp');
}

/**
 * Check an aggregation pipeline: an array of one-field stage documents with known names; `$match`
 * filters are checked like any filter, and no stage may name an operator that runs JavaScript (`$where`,
 * `$function`, `$accumulator`), at any depth: mingo runs pipelines with scripts enabled (mingo-pipeline.ts).
 *
 * @param pipeline - the pipeline as given.
 * @throws {@link TimeseriesError} `TypeMismatch`, `Location40323`, `Location40324`, what
 *   {@link checkStageSpec} throws for a stage's argument, or what {@link checkFilter} throws.
 */
export function checkPipeline(
  pipeline: unknown,
): asserts pipeline is ReadonlyArray<Readonly<Record<string, unknown>>> {
  if (!Array.isArray(pipeline)) throw wrongType('aggregate.pipeline', pipeline, 'array');
  checkNesting(pipeline);
  for (const stage of pipeline as unknown[]) {
    // Before the stage's own checks: mingo runs what this lets through with scripts enabled.
    refuseScripts(stage);
    if (!isPlainObject(stage)) {
      throw new TimeseriesError('TypeMismatch', "Each element of the 'pipeline' array must be an object");
    }
    const names = Object.keys(stage);
    if (names.length !== 1) {
      throw new TimeseriesError(
        'Location40323',
        'A pipeline stage specification object must contain exactly one field.',
      );
    }
    const name = names[0] as string;
    if (!kPipelineStages.has(name)) {
      throw new TimeseriesError('Location40324', `Unrecognized pipeline stage name: '${name}'`);
    }
    checkStageSpec(name, stage[name]);
    // A leading $match is evaluated by tsbuckets itself; the other stages by mingo.
    if (name !== '$match' || stage !== pipeline[0]) refusePrototypeNames(name, stage[name]);
    if (name === '$match') {
      const filter = stage[name];
      if (!isPlainObject(filter)) {
        throw new TimeseriesError('Location15959', 'the match filter must be an expression in an object');
      }
      checkExpression(filter, 0, 'read');
    }
  }
}

/**
 * Refuse a field name in a stage mingo evaluates that names a member of JavaScript's `Object.prototype`
 * (`__proto__`, `constructor`, `toString`...), alone or as a component of a dotted name. mingo keeps its
 * outputs, groups and paths in plain objects, where such a name reads the inherited member: a
 * `$setWindowFields` output named `toString` came out as `"[object Object]"`, a `$group` `_id` of
 * `{constructor: ...}` failed with a TypeError, a `$replaceRoot` of `{__proto__: ...}` replaced the
 * document's prototype. The server accepts these names; `find`, whose filters and projections tsbuckets
 * evaluates itself, handles them.
 *
 * @throws {@link TimeseriesError} `BadValue` naming the field and the stage.
 */
function refusePrototypeNames(stage: string, spec: unknown): void {
  if (Array.isArray(spec)) {
    for (const item of spec) refusePrototypeNames(stage, item);
    return;
  }
  if (!isPlainObject(spec)) return;
  for (const key of Object.keys(spec)) {
    if (key.split('.').some((part) => part in Object.prototype)) {
      throw new TimeseriesError(
        'BadValue',
        `${stage}: the field name '${key}' names a member of JavaScript's Object.prototype, which the pipeline engine cannot hold as a field; tsbuckets refuses it in aggregation stages (find handles it)`,
        { field: key },
      );
    }
    refusePrototypeNames(stage, spec[key]);
  }
}

/**
 * Run a call into mingo, turning its untyped errors into what MongoDB reports: `BadValue` with mingo's
 * message, MongoDB's wording where the two differ. tsbuckets' own errors pass unchanged.
 *
 * @param run - the call.
 * @returns what `run` returns.
 * @throws {@link TimeseriesError} for any error `run` throws.
 */
export function mingoCall<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw toMongoError(error);
  }
}

/**
 * The typed error MongoDB would report for an error thrown by mingo.
 *
 * @param error - anything thrown.
 * @returns `error` itself when it is a tsbuckets error, else a `BadValue` wrapping it.
 */
export function toMongoError(error: unknown): unknown {
  if (TsBucketsError.isTsBucketsError(error)) return error;
  const message = error instanceof Error ? error.message : describe(error);
  const unknownOperator = /^unknown (?:query )?operator:? (\$\S+)$/.exec(message);
  if (unknownOperator !== null) {
    return new TimeseriesError('BadValue', `unknown operator: ${unknownOperator[1] ?? ''}`, { cause: error });
  }
  const variable = /^Use of undefined variable: (\S+)$/.exec(message);
  if (variable !== null) {
    return new TimeseriesError('Location17276', `Use of undefined variable: ${variable[1] ?? ''}`, {
      cause: error,
    });
  }
  const script = /^(\$\w+) (?:operator )?requires 'scriptEnabled'/.exec(message);
  if (script !== null) {
    return new TimeseriesError('BadValue', `${script[1] ?? ''} is not allowed in this context`, {
      cause: error,
    });
  }
  const unknownStage = /^unregistered pipeline operator (\$[^\s.]+)\.?$/.exec(message);
  if (unknownStage !== null) {
    return new TimeseriesError(
      'Location40324',
      `Unrecognized pipeline stage name: '${unknownStage[1] ?? ''}'`,
      {
        cause: error,
      },
    );
  }
  return new TimeseriesError('BadValue', message, { cause: error });
}

/** A sort direction, in the forms the driver takes (a word in any case). */
export type SortDirection = 1 | -1 | 'asc' | 'desc' | 'ascending' | 'descending';

/** `find`'s sort: a document of directions, or `[field, direction]` pairs, as the driver takes them. */
export type FindSort =
  | string
  | Readonly<Record<string, SortDirection>>
  | readonly [string, SortDirection]
  | ReadonlyArray<string | readonly [string, SortDirection]>
  | ReadonlyMap<string, SortDirection>;

/**
 * A `find` sort in the forms the driver takes, as the document the server gets: directions `1`, `-1` (any
 * BSON number) or the driver's words (`'asc'`, `'ascending'`, `'desc'`, `'descending'`, any case), in a
 * document, a `Map`, one `[field, direction]` pair or an array of pairs; a field name alone (or in an
 * array) sorts ascending.
 *
 * @param sort - the sort given.
 * @returns `sort` itself when it is a document whose directions are numbers, else a document of `1` and
 *   `-1`.
 * @throws {@link TimeseriesError} `TypeMismatch` for another shape, `BadValue` for another direction.
 */
export function findSortDocument(sort: unknown): SortSpec {
  const pairs =
    typeof sort === 'string'
      ? [sort]
      : sort instanceof Map
        ? [...(sort as Map<unknown, unknown>)]
        : Array.isArray(sort)
          ? isSortPair(sort)
            ? [sort]
            : sort
          : isPlainObject(sort)
            ? undefined
            : null;
  if (pairs === null) throw wrongType('find.sort', sort, 'object');
  if (pairs === undefined) {
    const spec = sort as Record<string, unknown>;
    let words = false;
    for (const key in spec) {
      if (!hasOwnField(spec, key)) continue;
      if (typeof spec[key] === 'string') words = true;
      else sortDirection(spec[key]);
    }
    if (!words) return sort as SortSpec;
    const out: Record<string, 1 | -1> = {};
    for (const key in spec) if (hasOwnField(spec, key)) defineField(out, key, sortDirection(spec[key]));
    return out;
  }
  const out: Record<string, 1 | -1> = {};
  for (const item of pairs as unknown[]) {
    if (typeof item === 'string') defineField(out, item, 1);
    else if (Array.isArray(item) && item.length === 2 && typeof item[0] === 'string') {
      defineField(out, item[0], sortDirection(item[1]));
    } else throw wrongType('find.sort', sort, 'object');
  }
  return out;
}

/** Whether an array is one `[field, direction]` pair (rather than a list of pairs or of names). */
function isSortPair(sort: ReadonlyArray<unknown>): boolean {
  if (sort.length !== 2 || typeof sort[0] !== 'string') return false;
  const second = sort[1];
  if (typeof second !== 'string') return !Array.isArray(second);
  return ['asc', 'ascending', 'desc', 'descending'].includes(second.toLowerCase());
}

/** A sort direction as `1` or `-1` (see {@link findSortDocument}). */
function sortDirection(value: unknown): 1 | -1 {
  const word = typeof value === 'string' ? value.toLowerCase() : undefined;
  const direction = word === undefined ? bsonNumberValue(value) : undefined;
  if (direction === 1 || word === 'asc' || word === 'ascending') return 1;
  if (direction === -1 || word === 'desc' || word === 'descending') return -1;
  throw new TimeseriesError(
    'BadValue',
    '$sort key ordering must be 1 (for ascending) or -1 (for descending)',
  );
}
