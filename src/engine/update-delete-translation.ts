/**
 * Translation of metaField-only updates to bucket updates (docs/mongodb-behaviour.md §12.2; the server's
 * `timeseries_update_delete_util`): the query and every updated path must be on the metaField, which is
 * renamed to the bucket field `meta`.
 *
 * Query rule (MongoDB's walk, reproduced exactly): every element of the query is visited; an element named
 * `$expr` or `$where` anywhere is refused; a "top-level" field name — a field of the query itself, or of an
 * object that is an element of an array (the clauses of `$and`/`$or`/`$nor`, but also objects inside `$in`
 * lists) — that does not start with `$` must be the metaField or a dotted path below it, and is renamed.
 * `$jsonSchema` renames its `required` entries and `properties` names, which must be the metaField.
 *
 * | refusal                                  | code           | message                                           |
 * |------------------------------------------|----------------|---------------------------------------------------|
 * | upsert                                   | InvalidOptions | Cannot perform an upsert on a time-series ...     |
 * | pipeline update                          | InvalidOptions | ... using a pipeline update                       |
 * | replacement document (first key not `$`) | InvalidOptions | ... using a replacement document                  |
 * | collection without metaField             | InvalidOptions | ... that does not have a metaField                |
 * | updated path / `$rename` target not meta | InvalidOptions | ... which updates a field that is not the metaField |
 * | unknown update operator                  | FailedToParse  | Unknown modifier: ...                              |
 * | updated path with an empty component     | EmptyFieldName | The update path '...' contains an empty field name |
 * | operator value not an object             | FailedToParse  | Modifiers operate on fields but we found type ... |
 * | `$expr` / `$where` in the query          | InvalidOptions | Cannot use $expr when performing an update ...    |
 * | query field not meta                     | InvalidOptions | ... when querying on a field that is not the metaField |
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';
import type { BucketFilter } from '../storage/storage.js';
import { isPlainObject } from '../util/bson-value.js';
import type { QueryFilter } from '../util/bson-query.js';
import { defineField } from '../util/safe-record.js';

/** A translated update: operator → renamed path → value. */
export type BucketMetaUpdate = Readonly<Record<string, Readonly<Record<string, unknown>>>>;

/** MongoDB's update operators. */
const kUpdateOperators: ReadonlySet<string> = new Set([
  '$addToSet',
  '$bit',
  '$currentDate',
  '$inc',
  '$max',
  '$min',
  '$mul',
  '$pop',
  '$pull',
  '$pullAll',
  '$push',
  '$rename',
  '$set',
  '$setOnInsert',
  '$unset',
]);

function isMetaPath(path: string, metaField: string): boolean {
  const dot = path.indexOf('.');
  return (dot === -1 ? path : path.slice(0, dot)) === metaField;
}

function renamed(path: string): string {
  const dot = path.indexOf('.');
  return dot === -1 ? 'meta' : `meta${path.slice(dot)}`;
}

function queryFieldError(metaField: string): TimeseriesError {
  return new TimeseriesError(
    'InvalidOptions',
    `Cannot perform an update or delete on a time-series collection when querying on a field that is not the metaField '${metaField}'`,
  );
}

function updateFieldError(metaField: string): TimeseriesError {
  return new TimeseriesError(
    'InvalidOptions',
    `Cannot perform an update on a time-series collection which updates a field that is not the metaField '${metaField}'`,
  );
}

/**
 * The refusal of an upsert (checked before anything else).
 *
 * @returns MongoDB's `InvalidOptions` error.
 */
export function upsertRefusal(): TimeseriesError {
  return new TimeseriesError('InvalidOptions', 'Cannot perform an upsert on a time-series collection');
}

/**
 * Translate a metaField-only query to a bucket filter (`translateQuery`).
 *
 * @param query - the user's query over measurements.
 * @param metaField - the collection's metaField.
 * @returns the same query with the metaField renamed to `meta`.
 * @throws {@link TimeseriesError} `InvalidOptions` for `$expr`, `$where` or a field that is not the
 *   metaField.
 * @example
 * ```ts
 * translateQuery({ $or: [{ 'sensor.id': 1 }, { sensor: null }] }, 'sensor');
 * // { $or: [{ 'meta.id': 1 }, { meta: null }] }
 * ```
 */
export function translateQuery(query: QueryFilter, metaField: string): BucketFilter {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(query)) {
    const translated = translateElement(name, query[name], metaField, true, false);
    defineField(out, translated.name, translated.value);
  }
  return out;
}

function translateElement(
  name: string,
  value: unknown,
  metaField: string,
  isTopLevelField: boolean,
  parentIsArray: boolean,
): { readonly name: string; readonly value: unknown } {
  if (name === '$expr' || name === '$where') {
    throw new TimeseriesError(
      'InvalidOptions',
      `Cannot use ${name} when performing an update or delete on a time-series collection`,
    );
  }
  if (name === '$jsonSchema') return { name, value: translateJsonSchema(value, metaField) };
  let newName = name;
  if (isTopLevelField && !name.startsWith('$')) {
    if (!isMetaPath(name, metaField)) throw queryFieldError(metaField);
    newName = renamed(name);
  }
  const childrenAreTopLevel = parentIsArray && isPlainObject(value);
  if (Array.isArray(value)) {
    const elements = value.map(
      (element: unknown, i) => translateElement(String(i), element, metaField, false, true).value,
    );
    return { name: newName, value: elements };
  }
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      const child = translateElement(key, value[key], metaField, childrenAreTopLevel, false);
      defineField(out, child.name, child.value);
    }
    return { name: newName, value: out };
  }
  return { name: newName, value };
}

function translateJsonSchema(schema: unknown, metaField: string): unknown {
  if (!isPlainObject(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(schema)) {
    const value = schema[key];
    if (key === 'required' && Array.isArray(value)) {
      defineField(
        out,
        key,
        value.map((entry: unknown) => {
          if (entry !== metaField) throw queryFieldError(metaField);
          return renamed(entry);
        }),
      );
    } else if (key === 'properties' && isPlainObject(value)) {
      const properties: Record<string, unknown> = {};
      for (const property of Object.keys(value)) {
        if (property !== metaField) throw queryFieldError(metaField);
        defineField(properties, renamed(property), value[property]);
      }
      defineField(out, key, properties);
    } else {
      defineField(out, key, value);
    }
  }
  return out;
}

/**
 * Translate an update to an update of the bucket field `meta` (`translateUpdate`), after checking it is
 * an update with operators only.
 *
 * @param update - the user's update (unknown input).
 * @param metaField - the collection's metaField, if any.
 * @returns the update with every path renamed.
 * @throws {@link TimeseriesError} `InvalidOptions` for a pipeline, a replacement, a collection without
 *   metaField or a path that is not the metaField; `FailedToParse` for an unknown operator or an operator
 *   whose value is not an object; `TypeMismatch` when `update` is neither an object nor an array.
 */
export function translateUpdate(update: unknown, metaField: string | undefined): BucketMetaUpdate {
  if (Array.isArray(update)) {
    throw new TimeseriesError(
      'InvalidOptions',
      'Cannot perform an update on a time-series collection using a pipeline update',
    );
  }
  if (!isPlainObject(update)) {
    throw new TimeseriesError('TypeMismatch', 'Update argument must be either an object or an array');
  }
  const operators = Object.keys(update);
  if (operators.length === 0 || !(operators[0] as string).startsWith('$')) {
    throw new TimeseriesError(
      'InvalidOptions',
      'Cannot perform an update on a time-series collection using a replacement document',
    );
  }
  if (metaField === undefined) {
    throw new TimeseriesError(
      'InvalidOptions',
      'Cannot perform an update on a time-series collection that does not have a metaField',
    );
  }
  // Paths are checked first, as the server translates before it parses the operators.
  const out: Record<string, Record<string, unknown>> = {};
  for (const operator of operators) {
    const fields = update[operator];
    if (!isPlainObject(fields)) continue;
    const translated: Record<string, unknown> = {};
    for (const path of Object.keys(fields)) {
      if (!isMetaPath(path, metaField)) throw updateFieldError(metaField);
      checkNoEmptyField(path);
      let value = fields[path];
      if (operator === '$rename') {
        if (typeof value !== 'string' || !isMetaPath(value, metaField)) throw updateFieldError(metaField);
        checkNoEmptyField(value);
        value = renamed(value);
      }
      defineField(translated, renamed(path), value);
    }
    defineField(out, operator, translated);
  }
  for (const operator of operators) {
    if (!kUpdateOperators.has(operator)) {
      throw new TimeseriesError(
        'FailedToParse',
        `Unknown modifier: ${operator}. Expected a valid update modifier or pipeline-style update specified as an array`,
      );
    }
    const fields = update[operator];
    if (!isPlainObject(fields)) {
      throw new TimeseriesError(
        'FailedToParse',
        `Modifiers operate on fields but we found type ${typeName(fields)} instead. For example: {$mod: {<field>: ...}} not {${operator}: ${String(fields)}}`,
      );
    }
  }
  return out;
}

/**
 * An updated path must not have an empty component (`'tag.'`, `'tag..x'`): mingo read `'meta.'` as `meta`
 * and replaced or removed the whole meta.
 *
 * @throws {@link TimeseriesError} `EmptyFieldName`, as the server's update parser.
 */
function checkNoEmptyField(path: string): void {
  if (path.split('.').includes('')) {
    throw new TimeseriesError(
      'EmptyFieldName',
      `The update path '${path}' contains an empty field name, which is not allowed.`,
    );
  }
}

/** MongoDB's type name of a value that is not an object, for the modifier error. */
function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'double';
  if (typeof value === 'boolean') return 'bool';
  return typeof value;
}
