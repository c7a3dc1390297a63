/**
 * The update operators that compute with the value they update — `$inc`, `$mul`, `$min`, `$max` — with
 * MongoDB's semantics on BSON values (`arithmetic_node.cpp`, `compare_node.cpp`), for the metaField updates
 * of a time-series collection. mingo, which applies the other operators, knows only JS values: it left a
 * `Long`, a `Double` or a `Decimal128` unchanged under `$inc` and `$mul` (and a string too, where the
 * server refuses), and compared them by their decimal strings under `$min` and `$max`.
 *
 * - `$inc` adds, `$mul` multiplies, with the server's type rules (util/bson-arithmetic.ts); a missing
 *   field becomes the operand (`$inc`) or a zero of the operand's type (`$mul`); a field that is not a
 *   number, or an operand that is not one, is `TypeMismatch`; an int64 overflow is `BadValue`.
 * - `$min` / `$max` keep whichever orders lower / higher in BSON order, or create the field.
 *
 * Paths are dotted field names and array indexes through documents and arrays that exist (or documents
 * that do not yet, which are created); any other path (a positional `$`, an index past an array's end, a
 * scalar on the way) is left to mingo with the whole update, as before.
 *
 * @packageDocumentation
 */
import { Decimal128, Double, Long } from 'bson';

import { TimeseriesError } from '../errors.js';
import { bsonArithmetic, numericKind } from '../util/bson-arithmetic.js';
import { isPlainObject } from '../util/bson-value.js';
import { bsonTypeName } from '../util/query-validation.js';
import { counterValue } from '../storage/counter-update.js';
import { lastSegment, parentOf, setIn, valueIn, writableKey } from '../storage/operator-update.js';
import type { PathParent } from '../storage/operator-update.js';
import { defineField } from '../util/safe-record.js';

/** The operators applied here. */
const kNumericOperators: ReadonlySet<string> = new Set(['$inc', '$mul', '$min', '$max']);

/**
 * Apply the numeric operators of `update` to `doc` in place, and return the rest of the update (for
 * mingo); or `undefined`, having changed nothing, when a path of theirs is not one this module walks.
 *
 * @param doc - the document (a scratch copy: it is changed in place).
 * @param update - the update document.
 * @param id - the document's `_id`, for the server's error messages.
 * @returns the update without `$inc`, `$mul`, `$min` and `$max`, or `undefined`.
 * @throws {@link TimeseriesError} `ConflictingUpdateOperators` when two paths of the update overlap;
 *   `TypeMismatch` for `$inc`/`$mul` on or with a value that is not a number; `BadValue` when an int64
 *   result overflows.
 */
export function applyNumericOperators(
  doc: Record<string, unknown>,
  update: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
  id: unknown,
): Record<string, Readonly<Record<string, unknown>>> | undefined {
  checkConflicts(update);
  const rest: Record<string, Readonly<Record<string, unknown>>> = {};
  const steps: Array<{ op: string; path: string; value: unknown; parent: PathParent | undefined }> = [];
  for (const op of Object.keys(update)) {
    const fields = update[op] as Readonly<Record<string, unknown>>;
    if (!kNumericOperators.has(op)) {
      defineField(rest, op, fields);
      continue;
    }
    for (const path of Object.keys(fields)) {
      const parent = parentOf(doc, path, 'check');
      // A missing parent is a new document: its key must be one a document may hold.
      if (parent === 'refused' || !writableKey(parent === 'missing' ? {} : parent, lastSegment(path))) {
        return undefined;
      }
      steps.push({ op, path, value: fields[path], parent: parent === 'missing' ? undefined : parent });
    }
  }
  if (steps.length === 0) return rest;
  // Checked first, applied after: a refused operator changes nothing.
  const results = steps.map(({ op, path, value, parent }) => {
    const current = parent === undefined ? undefined : valueIn(parent, lastSegment(path));
    return { path, parent, next: operatorResult(op, current, value, path, id) };
  });
  for (const { path, parent, next } of results) {
    setIn(parent ?? (parentOf(doc, path, 'create') as PathParent), lastSegment(path), next);
  }
  return rest;
}

/** The value an operator leaves at a path. */
function operatorResult(op: string, current: unknown, value: unknown, path: string, id: unknown): unknown {
  if (op === '$min' || op === '$max') return counterValue(op, current, value);
  const verb = op === '$inc' ? 'increment' : 'multiply';
  if (numericKind(value) === undefined) {
    throw new TimeseriesError(
      'TypeMismatch',
      `Cannot ${verb} with non-numeric argument: {${path}: ${describeValue(value)}}`,
    );
  }
  if (current === undefined) return op === '$inc' ? value : zeroLike(value);
  const field = path.slice(path.lastIndexOf('.') + 1);
  if (numericKind(current) === undefined) {
    throw new TimeseriesError(
      'TypeMismatch',
      `Cannot apply ${op} to a value of non-numeric type. {_id: ${describeValue(id)}} has the field '${field}' of non-numeric type ${bsonTypeName(current)}`,
    );
  }
  const result = bsonArithmetic(op === '$inc' ? 'add' : 'multiply', current, value);
  if (result === undefined) {
    throw new TimeseriesError(
      'BadValue',
      `Failed to apply ${op} operations to current value (${describeValue(current)}) for document {_id: ${describeValue(id)}}`,
    );
  }
  return result;
}

/** A zero of the type of `value` (what `$mul` sets a missing field to). */
function zeroLike(value: unknown): unknown {
  switch (numericKind(value)) {
    case 'int64':
      return Long.fromNumber(0);
    case 'double':
      return new Double(0);
    case 'decimal':
      return Decimal128.fromString('0');
    default:
      return 0;
  }
}

/**
 * Refuse an update two of whose paths overlap (the same path, or one inside the other; a `$rename`
 * counts its source and its target), as the server does.
 */
function checkConflicts(update: Readonly<Record<string, Readonly<Record<string, unknown>>>>): void {
  const paths: string[] = [];
  for (const op of Object.keys(update)) {
    const fields = update[op] as Readonly<Record<string, unknown>>;
    for (const path of Object.keys(fields)) {
      paths.push(path);
      const target = fields[path];
      if (op === '$rename' && typeof target === 'string') paths.push(target);
    }
  }
  for (let i = 0; i < paths.length; i++) {
    for (let j = 0; j < i; j++) {
      const a = paths[i] as string;
      const b = paths[j] as string;
      if (a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`)) {
        const [inner, outer] = a.length >= b.length ? [a, b] : [b, a];
        throw new TimeseriesError(
          'ConflictingUpdateOperators',
          `Updating the path '${inner}' would create a conflict at '${outer}'`,
        );
      }
    }
  }
}

/** A value as the messages show it. */
function describeValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  const tag = (v as { _bsontype?: unknown } | undefined)?._bsontype;
  if (tag === 'ObjectId') return `ObjectId('${String(v)}')`;
  if (tag === 'Long') return `(NumberLong)${String(v)}`;
  if (tag === 'Decimal128') return `NumberDecimal("${String(v)}")`;
  if (tag === 'Double') return String((v as Double).value);
  if (isPlainObject(v) || Array.isArray(v)) return JSON.stringify(v);
  return String(v);
}
