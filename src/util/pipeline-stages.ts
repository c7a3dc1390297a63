/**
 * The arguments of aggregation stages that tsbuckets checks before mingo runs them, with the codes and
 * messages of the server's stage parsers (`document_source_group.cpp` and `accumulator.h` for `$group`,
 * `document_source_sort.cpp` for `$sort`, `document_source_count.cpp` for `$count`,
 * `document_source_unwind.cpp` for `$unwind`). mingo would answer
 * these with its own wording (or, for a `$sort` direction, not at all).
 *
 * | stage    | refusal                                        | code  |
 * | -------- | ---------------------------------------------- | ----- |
 * | `$group` | not a document                                 | 15947 |
 * | `$group` | no `_id`                                       | 15955 |
 * | `$group` | output field with a `.` / starting with `$`    | 40235 / 40236 |
 * | `$group` | output not a document / not one field          | 40234 / 40238 |
 * | `$group` | unknown accumulator                            | 15952 |
 * | `$sort`  | not a document / empty / bad direction         | 15973 / 15976 / 15975 |
 * | `$count` | not a string / empty / `$`-prefixed / dotted   | 40156 / 40157 / 40158 / 40160 |
 * | `$unwind`| empty path / path without the `$` prefix       | 28812 / 28818 |
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';
import { bsonNumberValue, isPlainObject } from './bson-value.js';
import { hasOwnField } from './safe-record.js';

/** The accumulators of `$group` (MongoDB 8.0). One MongoDB knows but mingo does not fails when run. */
const kGroupAccumulators: ReadonlySet<string> = new Set([
  '$accumulator',
  '$addToSet',
  '$avg',
  '$bottom',
  '$bottomN',
  '$concatArrays',
  '$count',
  '$first',
  '$firstN',
  '$last',
  '$lastN',
  '$max',
  '$maxN',
  '$median',
  '$mergeObjects',
  '$min',
  '$minN',
  '$percentile',
  '$push',
  '$setUnion',
  '$stdDevPop',
  '$stdDevSamp',
  '$sum',
  '$top',
  '$topN',
]);

/**
 * Check the argument of a stage whose parser tsbuckets reproduces (see the module comment); other
 * stages pass unchanged.
 *
 * @param name - the stage name (`$group`...).
 * @param spec - its argument.
 * @throws {@link TimeseriesError} with the server's code and message.
 * @example
 * ```ts
 * checkStageSpec('$group', { _id: null, n: { $foo: 1 } }); // Location15952 "unknown group operator '$foo'"
 * ```
 */
export function checkStageSpec(name: string, spec: unknown): void {
  switch (name) {
    case '$group':
      checkGroup(spec);
      return;
    case '$sort':
      checkSort(spec);
      return;
    case '$count':
      checkCount(spec);
      return;
    case '$unwind':
      checkUnwind(spec);
      return;
    default:
      return;
  }
}

function checkGroup(spec: unknown): void {
  if (!isPlainObject(spec)) {
    throw new TimeseriesError('Location15947', "a group's fields must be specified in an object");
  }
  if (!hasOwnField(spec, '_id')) {
    throw new TimeseriesError('Location15955', 'a group specification must include an _id');
  }
  for (const field in spec) {
    if (!hasOwnField(spec, field) || field === '_id') continue;
    if (field.includes('.')) {
      throw new TimeseriesError('Location40235', `The field name '${field}' cannot contain '.'`);
    }
    if (field.startsWith('$')) {
      throw new TimeseriesError('Location40236', `The field name '${field}' cannot be an operator name`);
    }
    const accumulator = spec[field];
    if (!isPlainObject(accumulator)) {
      throw new TimeseriesError('Location40234', `The field '${field}' must be an accumulator object`);
    }
    const operators = Object.keys(accumulator);
    if (operators.length !== 1) {
      throw new TimeseriesError('Location40238', `The field '${field}' must specify one accumulator`);
    }
    const operator = operators[0] as string;
    if (!kGroupAccumulators.has(operator)) {
      throw new TimeseriesError('Location15952', `unknown group operator '${operator}'`);
    }
  }
}

function checkSort(spec: unknown): void {
  if (!isPlainObject(spec)) {
    throw new TimeseriesError('Location15973', 'the $sort key specification must be an object');
  }
  let keys = 0;
  for (const field in spec) {
    if (!hasOwnField(spec, field)) continue;
    keys++;
    const direction = spec[field];
    // `{ $meta: 'textScore' }` and the like: a sort on metadata, left to the engine.
    if (isPlainObject(direction)) continue;
    const n = bsonNumberValue(direction);
    if (n !== 1 && n !== -1) {
      throw new TimeseriesError(
        'Location15975',
        '$sort key ordering must be 1 (for ascending) or -1 (for descending)',
      );
    }
  }
  if (keys === 0) {
    throw new TimeseriesError('Location15976', '$sort stage must have at least one sort key');
  }
}

function checkCount(spec: unknown): void {
  if (typeof spec !== 'string') {
    throw new TimeseriesError('Location40156', 'the count field must be a non-empty string');
  }
  if (spec.length === 0) {
    throw new TimeseriesError('Location40157', 'the count field must be a non-empty string');
  }
  if (spec.startsWith('$')) {
    throw new TimeseriesError('Location40158', 'the count field cannot be a $-prefixed path');
  }
  if (spec.includes('.')) {
    throw new TimeseriesError('Location40160', "the count field cannot contain '.'");
  }
}

/** The path of `$unwind` (a string, or an object's `path`); other shapes are left to the engine. */
function checkUnwind(spec: unknown): void {
  const path = isPlainObject(spec) ? spec.path : spec;
  if (typeof path !== 'string') return;
  if (path.length === 0) throw new TimeseriesError('Location28812', 'no path specified to $unwind stage');
  if (!path.startsWith('$')) {
    throw new TimeseriesError(
      'Location28818',
      `path option to $unwind stage should be prefixed with a '$': ${path}`,
    );
  }
}
