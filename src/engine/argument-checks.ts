/**
 * The arguments of every public method, checked before anything runs (MongoDB's IDL parsers and command
 * checks: `find_command.idl`, `write_ops.idl`, `aggregate_command.idl`). A method given an argument of
 * the wrong shape throws a {@link TimeseriesError} with MongoDB's code and message, never a `TypeError`
 * from deep inside, and never starts work it cannot finish.
 *
 * | argument                                             | code                           |
 * | ---------------------------------------------------- | ------------------------------ |
 * | options that are `null` or not a document            | `TypeMismatch`                 |
 * | `insertMany` documents / `aggregate` pipeline not an array | `TypeMismatch`           |
 * | filter: see `util/query-validation.ts`               | `TypeMismatch`, `BadValue`...  |
 * | `ordered`, `upsert` not booleans; `limit`, `skip` not numbers | `TypeMismatch`        |
 * | negative `limit` / `skip`                            | `Location51024`                |
 * | `sort` value other than 1 / -1                       | `BadValue`                     |
 * | collection name not a non-empty string, or with `$` or NUL | `InvalidNamespace`       |
 * | `$`-prefixed index key such as `$natural`            | `CannotCreateIndex`            |
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';
import { isPlainObject } from '../util/bson-value.js';
import { checkFilter, checkNesting, findSortDocument, wrongType } from '../util/query-validation.js';
import type { FilterContext } from '../util/query-validation.js';
import { hasOwnField } from '../util/safe-record.js';

/** An options argument after its check: a document (`{}` when the caller passed none). */
type Options = Readonly<Record<string, unknown>>;

const kNoOptions: Options = Object.freeze({});

/**
 * An optional options argument: `undefined` gives `{}`; anything but a document is refused.
 *
 * @param value - the argument.
 * @param field - its name in messages (`insert`, `find`...).
 * @returns the options.
 * @throws {@link TimeseriesError} `TypeMismatch`.
 */
export function checkOptions(value: unknown, field: string): Options {
  if (value === undefined) return kNoOptions;
  if (!isPlainObject(value)) throw wrongType(field, value, 'object');
  checkNesting(value);
  return value;
}

/**
 * A required document argument (collMod's changes, an update).
 *
 * @param value - the argument.
 * @param field - its name in messages.
 * @throws {@link TimeseriesError} `TypeMismatch`.
 */
export function checkDocument(value: unknown, field: string): asserts value is Options {
  if (!isPlainObject(value)) throw wrongType(field, value, 'object');
  checkNesting(value);
}

/**
 * An update argument: a document of operators or a pipeline (which the collection then refuses with
 * MongoDB's message for time-series collections).
 *
 * @param value - the argument.
 * @param field - its name in messages.
 * @throws {@link TimeseriesError} `TypeMismatch`.
 */
export function checkDocumentOrPipeline(value: unknown, field: string): void {
  if (!Array.isArray(value) && !isPlainObject(value)) throw wrongType(field, value, 'object');
  checkNesting(value);
}

function checkBoolean(options: Options, name: string, field: string): void {
  if (!hasOwnField(options, name)) return;
  const value = options[name];
  if (value !== undefined && typeof value !== 'boolean') throw wrongType(`${field}.${name}`, value, 'bool');
}

function checkCount(options: Options, name: string, field: string): void {
  if (!hasOwnField(options, name)) return;
  const value = options[name];
  if (value === undefined) return;
  // A JS number (what the reader counts with); BigInt and js-bson numbers are refused like strings.
  const n = typeof value === 'number' ? value : undefined;
  if (n === undefined || Number.isNaN(n)) {
    throw new TimeseriesError(
      'TypeMismatch',
      `BSON field '${field}.${name}' is the wrong type '${typeof value}', expected types '[int, double]'`,
      { field: name },
    );
  }
  if (n < 0) {
    throw new TimeseriesError(
      'Location51024',
      `BSON field '${name}' value must be >= 0, actual value '${String(n)}'`,
      { field: name },
    );
  }
}

/**
 * `insertMany`'s arguments.
 *
 * @param docs - must be an array (its elements are checked one by one by the insert).
 * @param options - `ordered` must be a boolean.
 * @returns the options.
 * @throws {@link TimeseriesError} `TypeMismatch`.
 */
export function checkInsertArguments(docs: unknown, options: unknown): Options {
  if (!Array.isArray(docs)) throw wrongType('insert.documents', docs, 'array');
  const checked = checkOptions(options, 'insert');
  checkBoolean(checked, 'ordered', 'insert');
  return checked;
}

/**
 * `find`'s arguments: the filter, then `projection`, `sort`, `limit`, `skip`.
 *
 * @param filter - the filter (`undefined` is `{}`).
 * @param options - the find options.
 * @returns the options.
 * @throws {@link TimeseriesError} see the module comment.
 */
export function checkFindArguments(filter: unknown, options: unknown): Options {
  if (filter !== undefined) checkFilter(filter, 'find.filter');
  const checked = checkOptions(options, 'find');
  refuseCollation(checked, 'find');
  const projection = checked.projection;
  if (projection !== undefined && !isPlainObject(projection))
    throw wrongType('find.projection', projection, 'object');
  checkCount(checked, 'limit', 'find');
  checkCount(checked, 'skip', 'find');
  if (checked.sort !== undefined) findSortDocument(checked.sort);
  return checked;
}

/**
 * A filter argument of `countDocuments`, `deleteMany`, `updateMany` or the buckets view.
 *
 * @param filter - the filter (`undefined` is `{}`).
 * @param field - its name in messages (`count.query`, `delete.q`...).
 * @param context - `'write'` for the query of an update or a delete (MongoDB's answer to `$where`).
 * @defaultValue context `'read'`
 * @throws {@link TimeseriesError} see `util/query-validation.ts`.
 */
export function checkFilterArgument(filter: unknown, field: string, context: FilterContext = 'read'): void {
  if (filter !== undefined) checkFilter(filter, field, context);
}

/**
 * A `collation`, which MongoDB applies to a command's string comparisons and tsbuckets does not: refused
 * rather than silently ignored (a JavaScript caller is not stopped by the option types).
 *
 * @param options - the command's options.
 * @param command - the command, in the message.
 * @throws {@link TimeseriesError} `InvalidOptions`.
 */
function refuseCollation(options: Options, command: string): void {
  if (hasOwnField(options, 'collation') && options.collation !== undefined) {
    throw new TimeseriesError(
      'InvalidOptions',
      `${command}: option 'collation' is not supported by tsbuckets`,
      {
        field: 'collation',
      },
    );
  }
}

/**
 * `updateMany`'s options: `upsert` must be a boolean (and is refused later when `true`), `arrayFilters` an
 * array of documents; a `collation` is refused.
 *
 * @param options - the options.
 * @returns the options.
 * @throws {@link TimeseriesError} `TypeMismatch`, `InvalidOptions`.
 */
export function checkUpdateOptions(options: unknown): Options {
  const checked = checkOptions(options, 'update');
  checkBoolean(checked, 'upsert', 'update');
  refuseCollation(checked, 'update');
  const arrayFilters = hasOwnField(checked, 'arrayFilters') ? checked.arrayFilters : undefined;
  if (arrayFilters !== undefined) {
    if (!Array.isArray(arrayFilters)) throw wrongType('update.updates.arrayFilters', arrayFilters, 'array');
    arrayFilters.forEach((filter: unknown, i) => {
      if (!isPlainObject(filter)) throw wrongType(`update.updates.arrayFilters.${i}`, filter, 'object');
    });
  }
  return checked;
}

/**
 * `deleteMany`'s options: a `collation` is refused.
 *
 * @param options - the options.
 * @throws {@link TimeseriesError} `TypeMismatch`, `InvalidOptions`.
 */
export function checkDeleteOptions(options: unknown): void {
  refuseCollation(checkOptions(options, 'delete'), 'delete');
}

/**
 * A collection name: a non-empty string without `$` or NUL (`NamespaceString::validCollectionName`).
 *
 * @param name - the name given.
 * @throws {@link TimeseriesError} `TypeMismatch` for a non-string, `InvalidNamespace` otherwise.
 */
export function checkCollectionName(name: unknown): asserts name is string {
  if (typeof name !== 'string') throw wrongType('create', name, 'string');
  if (name.length === 0 || name.startsWith('.') || name.includes('$') || name.includes('\0')) {
    throw new TimeseriesError('InvalidNamespace', `Invalid collection name: ${JSON.stringify(name)}`);
  }
}

/** The longest namespace the server creates (`NamespaceString::MaxNsCollectionLen`), in UTF-8 bytes. */
const kMaxNamespaceBytes = 255;

/**
 * The name of a collection to create, as the server's `userAllowedCreateNS` checks it besides
 * {@link checkCollectionName}: no `system.` collection, and a buckets namespace of at most 255 bytes.
 *
 * @param bucketsNamespace - `<db>.system.buckets.<name>`, the namespace the collection needs.
 * @param ns - `<db>.<name>`.
 * @param name - the name given (checked by {@link checkCollectionName} first).
 * @throws {@link TimeseriesError} `InvalidNamespace`.
 */
export function checkNewCollectionName(bucketsNamespace: string, ns: string, name: string): void {
  if (name.startsWith('system.'))
    throw new TimeseriesError('InvalidNamespace', `Invalid system namespace: ${ns}`);
  if (Buffer.byteLength(bucketsNamespace, 'utf8') > kMaxNamespaceBytes) {
    throw new TimeseriesError(
      'InvalidNamespace',
      `Fully qualified namespace is too long. Namespace: ${bucketsNamespace} Max: ${kMaxNamespaceBytes}`,
    );
  }
}

/**
 * An index key pattern's field names: none may start with `$` (`{ $natural: 1 }` is a hint, not an
 * index), except the wildcard `$**`.
 *
 * @param key - the key pattern (checked to be a document elsewhere).
 * @throws {@link TimeseriesError} `CannotCreateIndex`.
 */
export function checkIndexKeyNames(key: unknown): void {
  if (!isPlainObject(key)) return;
  for (const name in key) {
    if (!hasOwnField(key, name)) continue;
    if (name.startsWith('$') && name !== '$**') {
      throw new TimeseriesError(
        'CannotCreateIndex',
        "Index key contains an illegal field name: field name starts with '$'.",
        { field: name },
      );
    }
  }
}
