/**
 * MongoDB query filters evaluated with exact BSON semantics (the server's `MatchExpression`s), for values
 * that are js-bson classes or JS primitives.
 *
 * `mingo` gives MongoDB query semantics on plain JS values but treats js-bson classes as opaque objects
 * (`{ v: { $gt: 5 } }` does not match `{ v: new Int32(7) }`, and `Long`/`Decimal128` cannot be compared
 * exactly as JS numbers). This module compiles a filter once into a tree of plain nodes whose leaves
 * compare with {@link compareBsonValues}: canonical type bracketing, exact numeric comparison across
 * int32/int64/double/decimal128, byte order for strings, ObjectIds and binData, field order significant in
 * embedded documents. Filters using an operator this module does not implement are reported as
 * `unsupported`; {@link BsonQuery} then falls back to mingo for them.
 *
 * Supported: implicit equality, `$eq $ne $gt $gte $lt $lte $in $nin $exists $type $size $all $elemMatch
 * $not $regex $options $mod`, `$and $or $nor $comment`, the bucket-level `$_internalExprEq/Gt/Gte/Lt/Lte`
 * (no type bracketing, true when an array is met along the path), and `$expr` limited to `$eq`/`$ne`
 * between `$type` of field paths, field paths and literals (the mixed-schema guard of bucket filters).
 *
 * Path semantics follow the server's `ElementPath`: a numeric component also indexes arrays, a non-leaf
 * array is traversed element by element, a leaf array matches when the array itself or one of its
 * elements matches; `$ne`/`$nin`/`$not` negate the whole path match.
 *
 * @packageDocumentation
 */
import { Query } from 'mingo/query';

import { TimeseriesError } from '../errors.js';
import {
  BSON_TYPE_ALIASES,
  BsonType,
  bsonNumberValue,
  bsonTrueValue,
  bsonTypeOf,
  canonicalTypeOf,
  compareBsonValues,
  isPlainObject,
  jsBsonRegexFlags,
} from './bson-value.js';
import { jsonSchemaValidator } from './json-schema.js';
import { mingoValue } from './mingo-values.js';
import { kMingoOptions, mingoCall, toMongoError } from './query-validation.js';
import { defineField, getOwnField } from './safe-record.js';

/** A MongoDB query filter. */
export type QueryFilter = Readonly<Record<string, unknown>>;

/** Comparison operators of a leaf predicate. */
type CmpOp = 'eq' | 'gt' | 'gte' | 'lt' | 'lte';

/**
 * A predicate on the value(s) at a path. Compiled once per filter; evaluation never allocates closures.
 */
type LeafPredicate =
  | { readonly kind: 'cmp'; readonly op: CmpOp; readonly value: unknown }
  | { readonly kind: 'in'; readonly values: ReadonlyArray<unknown>; readonly regexes: ReadonlyArray<RegExp> }
  | { readonly kind: 'exists'; readonly expected: boolean }
  | { readonly kind: 'type'; readonly types: ReadonlyArray<number> }
  | { readonly kind: 'size'; readonly size: number }
  | { readonly kind: 'regex'; readonly regex: RegExp }
  | { readonly kind: 'mod'; readonly divisor: number; readonly remainder: number }
  | { readonly kind: 'elemMatchDoc'; readonly node: QueryNode }
  | { readonly kind: 'elemMatchValue'; readonly preds: ReadonlyArray<LeafPredicate> }
  | { readonly kind: 'internalExpr'; readonly op: CmpOp; readonly value: unknown };

/** An operand of the supported `$expr` subset. */
type ExprOperand =
  | { readonly kind: 'path'; readonly path: ReadonlyArray<string> }
  | { readonly kind: 'typeOf'; readonly path: ReadonlyArray<string> }
  | { readonly kind: 'literal'; readonly value: unknown };

/** A compiled filter node. */
type QueryNode =
  | { readonly kind: 'and' | 'or' | 'nor'; readonly children: ReadonlyArray<QueryNode> }
  | { readonly kind: 'path'; readonly path: ReadonlyArray<string>; readonly pred: LeafPredicate }
  | {
      readonly kind: 'notPath';
      readonly path: ReadonlyArray<string>;
      readonly preds: ReadonlyArray<LeafPredicate>;
    }
  | {
      readonly kind: 'exprCompare';
      readonly op: 'eq' | 'ne';
      readonly lhs: ExprOperand;
      readonly rhs: ExprOperand;
    }
  /** One condition of the filter that mingo evaluates (an operator this module does not implement). */
  | { readonly kind: 'mingo'; readonly query: Query };

/** The result of {@link compileFilter}. */
export type CompiledFilter =
  /** Every operator is implemented here: evaluate with {@link matchesCompiledFilter}. */
  | { readonly kind: 'exact'; readonly root: QueryNode }
  /** The filter uses an operator not implemented here (named in `reason`). */
  | { readonly kind: 'unsupported'; readonly reason: string };

class Unsupported extends Error {}

/** The aggregation `$type` name of each BSON type byte. */
const TYPE_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(BSON_TYPE_ALIASES)
    .filter(([name]) => name !== 'number')
    .map(([name, [code]]) => [code as number, name]),
);

const CMP_OPS: Readonly<Record<string, CmpOp>> = {
  $eq: 'eq',
  $gt: 'gt',
  $gte: 'gte',
  $lt: 'lt',
  $lte: 'lte',
};
const INTERNAL_EXPR_OPS: Readonly<Record<string, CmpOp>> = {
  $_internalExprEq: 'eq',
  $_internalExprGt: 'gt',
  $_internalExprGte: 'gte',
  $_internalExprLt: 'lt',
  $_internalExprLte: 'lte',
};

function isRegex(v: unknown): boolean {
  return (
    v instanceof RegExp ||
    (typeof v === 'object' && v !== null && (v as { _bsontype?: unknown })._bsontype === 'BSONRegExp')
  );
}

/**
 * Each compiled regex's pattern and flags as BSON carries them (`flags/pattern`): a regex operand also
 * matches a stored regex value with the same pattern and flags, as the server's regex match does
 * (`RegexMatchExpression::matchesSingleElement`).
 */
const regexIdentities = new WeakMap<RegExp, string>();

/** Whether a stored value is a regex of the same pattern and flags as the compiled `re`. */
function sameRegex(v: unknown, re: RegExp): boolean {
  if (typeof v !== 'object' || v === null) return false;
  let identity: string;
  if (v instanceof RegExp) identity = `${jsBsonRegexFlags(v)}/${v.source}`;
  else if ((v as { _bsontype?: unknown })._bsontype === 'BSONRegExp') {
    const r = v as { pattern: string; options: string };
    identity = `${r.options}/${r.pattern}`;
  } else return false;
  return regexIdentities.get(re) === identity;
}

/** A JS RegExp for a regex operand (`RegExp` or js-bson `BSONRegExp`) plus `$options`. */
function toRegExp(v: unknown, options: string | undefined): RegExp {
  const re = translateRegex(v, options);
  const pattern =
    v instanceof RegExp ? v.source : typeof v === 'string' ? v : (v as { pattern: string }).pattern;
  const flags =
    (v instanceof RegExp
      ? jsBsonRegexFlags(v)
      : typeof v === 'string'
        ? ''
        : (v as { options: string }).options) + (options ?? '');
  regexIdentities.set(re, `${flags}/${pattern}`);
  return re;
}

/** {@link toRegExp}'s translation to a JS RegExp. */
function translateRegex(v: unknown, options: string | undefined): RegExp {
  let source: string;
  let flags: string;
  if (v instanceof RegExp) {
    source = v.source;
    flags = v.flags.replace(/[gy]/g, '');
  } else if (typeof v === 'string') {
    source = v;
    flags = '';
  } else if (isRegex(v)) {
    const r = v as { pattern: string; options: string };
    source = r.pattern;
    flags = r.options;
  } else {
    throw new Unsupported('$regex operand must be a string or a regex');
  }
  const all = flags + (options ?? '');
  let jsFlags = '';
  for (const f of new Set(all)) {
    if (f === 'i' || f === 'm' || f === 's') jsFlags += f;
    else if (f === 'x') source = extendedSource(source);
    // The 'l' and 'u' PCRE flags have no exact JS equivalent.
    else throw new Unsupported(`regex flag '${f}'`);
  }
  return new RegExp(source, jsFlags);
}

/**
 * A pattern written for PCRE's extended mode (`$options: 'x'`) as a plain pattern: whitespace and `#`
 * comments (to the end of the line) are dropped, except escaped or inside a character class.
 */
function extendedSource(source: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i] as string;
    if (c === '\\') {
      out += source.slice(i, i + 2);
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
      out += c;
    } else if (c === '[') {
      inClass = true;
      out += c;
    } else if (c === '#') {
      while (i + 1 < source.length && source[i + 1] !== '\n') i++;
    } else if (!/\s/u.test(c)) out += c;
  }
  return out;
}

function isOperatorObject(v: unknown): v is Record<string, unknown> {
  if (!isPlainObject(v)) return false;
  const keys = Object.keys(v);
  return keys.length > 0 && (keys[0] as string).startsWith('$');
}

function splitPath(path: string): ReadonlyArray<string> {
  return path.split('.');
}

/**
 * Compile a filter. With `mixed`, a condition this module does not implement (one field's operators, a
 * top-level operator such as `$where` or `$jsonSchema`, an `$expr` beyond the supported subset) becomes a
 * node mingo evaluates alone, and the other conditions stay exact; without, it fails the whole filter.
 */
function compileNode(filter: unknown, mixed = false): QueryNode {
  if (!isPlainObject(filter)) throw new Unsupported('filter must be an object');
  const children: QueryNode[] = [];
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (value === undefined || key === '$comment') continue;
    try {
      children.push(compileCondition(key, value, mixed));
    } catch (e) {
      if (!mixed || !(e instanceof Unsupported)) throw e;
      const part: Record<string, unknown> = {};
      defineField(part, key, value);
      const query = mingoCall(() => new Query(part, { ...kMingoOptions, jsonSchemaValidator }));
      children.push({ kind: 'mingo', query });
    }
  }
  return children.length === 1 ? (children[0] as QueryNode) : { kind: 'and', children };
}

/** One condition of a filter: a logical operator, an `$expr`, or a field's value or operators. */
function compileCondition(key: string, value: unknown, mixed: boolean): QueryNode {
  switch (key) {
    case '$and':
    case '$or':
    case '$nor': {
      if (!Array.isArray(value) || value.length === 0)
        throw new Unsupported(`${key} needs a non-empty array`);
      return {
        kind: key === '$and' ? 'and' : key === '$or' ? 'or' : 'nor',
        children: value.map((child: unknown) => compileNode(child, mixed)),
      };
    }
    case '$expr':
      return compileExpr(value);
    default:
      if (key.startsWith('$')) throw new Unsupported(`top-level operator ${key}`);
      return compileField(splitPath(key), value);
  }
}

function compileField(path: ReadonlyArray<string>, value: unknown): QueryNode {
  if (isRegex(value))
    return { kind: 'path', path, pred: { kind: 'regex', regex: toRegExp(value, undefined) } };
  if (!isOperatorObject(value)) return { kind: 'path', path, pred: { kind: 'cmp', op: 'eq', value } };
  const nodes: QueryNode[] = [];
  const ops = value;
  for (const op of Object.keys(ops)) {
    const operand = ops[op];
    const cmp = CMP_OPS[op];
    if (cmp !== undefined) {
      nodes.push({ kind: 'path', path, pred: compileCmp(cmp, operand) });
      continue;
    }
    const internal = INTERNAL_EXPR_OPS[op];
    if (internal !== undefined) {
      if (Array.isArray(operand) || operand === undefined)
        throw new Unsupported(`${op} with an array operand`);
      nodes.push({ kind: 'path', path, pred: { kind: 'internalExpr', op: internal, value: operand } });
      continue;
    }
    switch (op) {
      case '$ne':
        nodes.push({ kind: 'notPath', path, preds: [compileCmp('eq', operand)] });
        break;
      case '$in':
        nodes.push({ kind: 'path', path, pred: compileIn(operand) });
        break;
      case '$nin':
        nodes.push({ kind: 'notPath', path, preds: [compileIn(operand)] });
        break;
      case '$exists':
        // `$exists: false` is NOT(`$exists: true`) over the whole path, as the server parses it: with an
        // array along the path, one element having the field is enough to fail it.
        nodes.push(
          bsonTrueValue(operand)
            ? { kind: 'path', path, pred: { kind: 'exists', expected: true } }
            : { kind: 'notPath', path, preds: [{ kind: 'exists', expected: true }] },
        );
        break;
      case '$type':
        nodes.push({ kind: 'path', path, pred: compileType(operand) });
        break;
      case '$size': {
        const size = bsonNumberValue(operand);
        if (size === undefined || !Number.isInteger(size)) throw new Unsupported('$size needs an integer');
        nodes.push({ kind: 'path', path, pred: { kind: 'size', size } });
        break;
      }
      case '$regex': {
        const options = ops.$options;
        nodes.push({
          kind: 'path',
          path,
          pred: {
            kind: 'regex',
            regex: toRegExp(operand, typeof options === 'string' ? options : undefined),
          },
        });
        break;
      }
      case '$options':
        if (!('$regex' in ops)) throw new Unsupported('$options without $regex');
        break;
      case '$mod': {
        if (!Array.isArray(operand) || operand.length !== 2)
          throw new Unsupported('$mod needs [divisor, remainder]');
        // Any numeric type, as the server reads them (an int64 beyond 2^53 is left to mingo).
        const d = bsonNumberValue(operand[0]);
        const r = bsonNumberValue(operand[1]);
        if (d === undefined || r === undefined || d === 0 || !Number.isSafeInteger(Math.trunc(d)))
          throw new Unsupported('$mod operands');
        if (!Number.isSafeInteger(Math.trunc(r))) throw new Unsupported('$mod operands');
        nodes.push({
          kind: 'path',
          path,
          pred: { kind: 'mod', divisor: Math.trunc(d), remainder: Math.trunc(r) },
        });
        break;
      }
      case '$all': {
        if (!Array.isArray(operand) || operand.length === 0) {
          // `$all: []` matches nothing.
          nodes.push({ kind: 'path', path, pred: { kind: 'in', values: [], regexes: [] } });
          break;
        }
        for (const item of operand) nodes.push({ kind: 'path', path, pred: compileAllItem(item) });
        break;
      }
      case '$elemMatch':
        nodes.push({ kind: 'path', path, pred: compileElemMatch(operand) });
        break;
      case '$not': {
        if (isRegex(operand)) {
          nodes.push({
            kind: 'notPath',
            path,
            preds: [{ kind: 'regex', regex: toRegExp(operand, undefined) }],
          });
          break;
        }
        if (!isOperatorObject(operand)) throw new Unsupported('$not needs an operator object or a regex');
        nodes.push({ kind: 'notPath', path, preds: leafPredicatesOf(path, operand) });
        break;
      }
      default:
        throw new Unsupported(`operator ${op}`);
    }
  }
  return nodes.length === 1 ? (nodes[0] as QueryNode) : { kind: 'and', children: nodes };
}

/** The leaf predicates of an operator object whose operators are all positive leaf predicates. */
function leafPredicatesOf(
  path: ReadonlyArray<string>,
  ops: Record<string, unknown>,
): ReadonlyArray<LeafPredicate> {
  const compiled = compileField(path, ops);
  const nodes = compiled.kind === 'and' ? compiled.children : [compiled];
  return nodes.map((n) => {
    if (n.kind !== 'path') throw new Unsupported('negated operators inside $not or $elemMatch');
    return n.pred;
  });
}

function compileCmp(op: CmpOp, operand: unknown): LeafPredicate {
  if (operand === undefined) throw new Unsupported('comparison with undefined');
  if (isRegex(operand) && op !== 'eq') throw new Unsupported('range comparison with a regex');
  return { kind: 'cmp', op, value: operand };
}

function compileIn(operand: unknown): LeafPredicate {
  if (!Array.isArray(operand)) throw new Unsupported('$in/$nin need an array');
  const values: unknown[] = [];
  const regexes: RegExp[] = [];
  for (const v of operand as unknown[]) {
    if (isRegex(v)) regexes.push(toRegExp(v, undefined));
    else if (isOperatorObject(v)) throw new Unsupported('operator inside $in');
    else values.push(v);
  }
  return { kind: 'in', values, regexes };
}

function compileType(operand: unknown): LeafPredicate {
  const items = Array.isArray(operand) ? (operand as unknown[]) : [operand];
  const types: number[] = [];
  for (const item of items) {
    if (typeof item === 'number') {
      types.push(item === -1 ? BsonType.minKey : item);
    } else if (typeof item === 'string') {
      const codes = BSON_TYPE_ALIASES[item];
      if (codes === undefined) throw new Unsupported(`$type alias ${item}`);
      types.push(...codes);
    } else {
      throw new Unsupported('$type operand');
    }
  }
  return { kind: 'type', types };
}

function compileAllItem(item: unknown): LeafPredicate {
  if (isRegex(item)) return { kind: 'regex', regex: toRegExp(item, undefined) };
  if (isPlainObject(item) && Object.keys(item)[0] === '$elemMatch') return compileElemMatch(item.$elemMatch);
  if (isOperatorObject(item)) throw new Unsupported('operator inside $all');
  return { kind: 'cmp', op: 'eq', value: item };
}

function compileElemMatch(operand: unknown): LeafPredicate {
  if (!isPlainObject(operand)) throw new Unsupported('$elemMatch needs an object');
  const keys = Object.keys(operand);
  // Server rule: an $elemMatch whose first key is an operator other than $and/$or/$nor/$expr matches values.
  const first = keys[0];
  if (
    first !== undefined &&
    first.startsWith('$') &&
    first !== '$and' &&
    first !== '$or' &&
    first !== '$nor' &&
    first !== '$expr'
  ) {
    return { kind: 'elemMatchValue', preds: leafPredicatesOf([], operand) };
  }
  return { kind: 'elemMatchDoc', node: compileNode(operand) };
}

function compileExprOperand(v: unknown): ExprOperand {
  if (typeof v === 'string' && v.startsWith('$')) {
    if (v.startsWith('$$')) throw new Unsupported('$expr variables');
    return { kind: 'path', path: splitPath(v.slice(1)) };
  }
  if (isPlainObject(v)) {
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] === '$type') {
      const arg = Array.isArray(v.$type) ? (v.$type as unknown[])[0] : v.$type;
      const inner = compileExprOperand(arg);
      if (inner.kind !== 'path' || (Array.isArray(v.$type) && (v.$type as unknown[]).length !== 1)) {
        throw new Unsupported('$type of a non-path expression');
      }
      return { kind: 'typeOf', path: inner.path };
    }
    if (keys.length === 1 && keys[0] === '$literal') return { kind: 'literal', value: v.$literal };
    throw new Unsupported('$expr operator');
  }
  if (Array.isArray(v)) throw new Unsupported('$expr array literal');
  return { kind: 'literal', value: v };
}

function compileExpr(value: unknown): QueryNode {
  if (!isPlainObject(value)) throw new Unsupported('$expr');
  const keys = Object.keys(value);
  const op = keys[0];
  if (keys.length !== 1 || (op !== '$eq' && op !== '$ne')) throw new Unsupported('$expr other than $eq/$ne');
  const args = value[op];
  if (!Array.isArray(args) || args.length !== 2) throw new Unsupported('$expr arguments');
  return {
    kind: 'exprCompare',
    op: op === '$eq' ? 'eq' : 'ne',
    lhs: compileExprOperand(args[0]),
    rhs: compileExprOperand(args[1]),
  };
}

/**
 * Compile a filter into a tree evaluated by {@link matchesCompiledFilter}.
 *
 * @param filter - a MongoDB query filter.
 * @returns `exact` with the tree, or `unsupported` naming the first operator not implemented here.
 * @example
 * ```ts
 * const compiled = compileFilter({ v: { $gt: 5 } });
 * if (compiled.kind === 'exact') matchesCompiledFilter(compiled, { v: new Int32(7) }); // true
 * ```
 */
export function compileFilter(filter: QueryFilter): CompiledFilter {
  try {
    return { kind: 'exact', root: compileNode(filter) };
  } catch (e) {
    if (e instanceof Unsupported) return { kind: 'unsupported', reason: e.message };
    throw e;
  }
}

// ---------------------------------------------------------------------------------------------------
// Evaluation
// ---------------------------------------------------------------------------------------------------

function isArrayIndex(s: string): boolean {
  if (s.length === 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

function isNaNValue(v: unknown): boolean {
  if (typeof v === 'number') return Number.isNaN(v);
  if (typeof v !== 'object' || v === null) return false;
  const tag = (v as { _bsontype?: unknown })._bsontype;
  if (tag === 'Double') return Number.isNaN((v as { value: number }).value);
  if (tag === 'Decimal128') return (v as { toString(): string }).toString() === 'NaN';
  return false;
}

function isMinOrMaxKey(v: unknown): boolean {
  const tag = typeof v === 'object' && v !== null ? (v as { _bsontype?: unknown })._bsontype : undefined;
  return tag === 'MinKey' || tag === 'MaxKey';
}

function cmpResult(op: CmpOp, c: number): boolean {
  switch (op) {
    case 'eq':
      return c === 0;
    case 'gt':
      return c > 0;
    case 'gte':
      return c >= 0;
    case 'lt':
      return c < 0;
    case 'lte':
      return c <= 0;
    default: {
      const never: never = op;
      return never;
    }
  }
}

/** A comparison match expression on one value (server `ComparisonMatchExpressionBase`). */
function matchesCmp(v: unknown, op: CmpOp, operand: unknown): boolean {
  if (operand === null) {
    // {$eq: null} matches null and missing; $gte/$lte behave as $eq, $gt/$lt match nothing.
    if (op === 'gt' || op === 'lt') return false;
    return v === null || v === undefined;
  }
  if (v === undefined) return false;
  if (isRegex(operand)) {
    // {$eq: /re/} compares regexes as values.
    return isRegex(v) && compareBsonValues(v, operand) === 0;
  }
  if (isMinOrMaxKey(operand)) return cmpResult(op, compareBsonValues(v, operand));
  if (canonicalTypeOf(v) !== canonicalTypeOf(operand)) return false;
  // NaN equals only NaN and is neither greater nor smaller than any number in a query.
  const vNaN = isNaNValue(v);
  const oNaN = isNaNValue(operand);
  if (vNaN || oNaN) return vNaN && oNaN && (op === 'eq' || op === 'gte' || op === 'lte');
  return cmpResult(op, compareBsonValues(v, operand));
}

function modOf(v: unknown, divisor: number, remainder: number): boolean {
  const type = bsonTypeOf(v);
  if (type === BsonType.long) {
    const big = BigInt((v as { toString(): string }).toString());
    return big % BigInt(divisor) === BigInt(remainder);
  }
  let n: number;
  if (typeof v === 'number') n = v;
  else if (type === BsonType.int || type === BsonType.double || type === BsonType.decimal) {
    n = Number((v as { toString(): string }).toString());
  } else return false;
  if (!Number.isFinite(n)) return false;
  return Math.trunc(n) % divisor === remainder;
}

/** Whether one value (not traversing arrays) satisfies a leaf predicate. */
function matchesValue(v: unknown, pred: LeafPredicate): boolean {
  switch (pred.kind) {
    case 'cmp':
      return matchesCmp(v, pred.op, pred.value);
    case 'in': {
      for (const operand of pred.values) if (matchesCmp(v, 'eq', operand)) return true;
      if (typeof v === 'string') for (const re of pred.regexes) if (re.test(v)) return true;
      for (const re of pred.regexes) if (sameRegex(v, re)) return true;
      return false;
    }
    case 'type':
      return v !== undefined && pred.types.includes(bsonTypeOf(v));
    case 'regex':
      if (typeof v === 'string') return pred.regex.test(v);
      if ((v as { _bsontype?: unknown } | null)?._bsontype === 'BSONSymbol')
        return pred.regex.test((v as { value: string }).value);
      return sameRegex(v, pred.regex);
    case 'mod':
      return v !== undefined && v !== null && modOf(v, pred.divisor, pred.remainder);
    case 'exists':
    case 'size':
    case 'elemMatchDoc':
    case 'elemMatchValue':
    case 'internalExpr':
      // Handled on the whole leaf by matchesLeaf.
      return false;
    default: {
      const never: never = pred;
      return never;
    }
  }
}

/** Whether the value at the end of a path (possibly missing, possibly an array) satisfies `pred`. */
function matchesLeaf(v: unknown, pred: LeafPredicate): boolean {
  switch (pred.kind) {
    case 'exists':
      return (v !== undefined) === pred.expected;
    case 'size':
      return Array.isArray(v) && v.length === pred.size;
    case 'elemMatchDoc':
      // Elements that are documents, or arrays read as documents of their indexes (the server's
      // ElemMatchObjectMatchExpression): `{$elemMatch: {}}` matches `[[]]`, `{b: 5}` not `[[{b: 5}]]`.
      if (!Array.isArray(v)) return false;
      for (const el of v) {
        if (isPlainObject(el) && matchesNode(el, pred.node)) return true;
        if (Array.isArray(el) && matchesNode(arrayAsDocument(el), pred.node)) return true;
      }
      return false;
    case 'elemMatchValue':
      if (!Array.isArray(v)) return false;
      for (const el of v) if (allValuePreds(el, pred.preds)) return true;
      return false;
    case 'internalExpr':
      return Array.isArray(v) || cmpResult(pred.op, compareBsonValues(v, pred.value));
    default:
      break;
  }
  if (matchesValue(v, pred)) return true;
  if (Array.isArray(v)) for (const el of v) if (matchesValue(el, pred)) return true;
  return false;
}

/**
 * Whether one element satisfies every predicate of a value `$elemMatch`, the element itself (the server's
 * `matchesSingleElement`): `{$elemMatch: {$lt: 6}}` does not look into an element `[5]`, and `$type:
 * 'number'` is not met by one.
 */
function allValuePreds(v: unknown, preds: ReadonlyArray<LeafPredicate>): boolean {
  for (const p of preds) {
    const whole =
      p.kind === 'exists' ||
      p.kind === 'size' ||
      p.kind === 'elemMatchDoc' ||
      p.kind === 'elemMatchValue' ||
      p.kind === 'internalExpr';
    if (!(whole ? matchesLeaf(v, p) : matchesValue(v, p))) return false;
  }
  return true;
}

/** An array as a document of its indexes (`[5, 7]` as `{0: 5, 1: 7}`), as the server reads one. */
function arrayAsDocument(array: ReadonlyArray<unknown>): Record<string, unknown> {
  const doc: Record<string, unknown> = {};
  for (let i = 0; i < array.length; i++) doc[String(i)] = array[i];
  return doc;
}

/** Walk `path` from component `i` of `value` (server `ElementPath` traversal). */
function matchesPathAt(value: unknown, path: ReadonlyArray<string>, i: number, pred: LeafPredicate): boolean {
  if (i === path.length) return matchesLeaf(value, pred);
  const part = path[i] as string;
  if (Array.isArray(value)) {
    // Bucket-level comparisons accept any bucket with an array along the path (they only prune).
    if (pred.kind === 'internalExpr') return true;
    if (isArrayIndex(part) && matchesPathAt(value[Number(part)], path, i + 1, pred)) return true;
    // Only document elements are walked into: an empty array, a scalar element or a nested array adds no
    // "missing" value (so `{'a.b': null}` does not match `a: []` or `a: [1, 2]`; newest
    // null_query_semantics.js).
    for (const el of value) {
      if (isPlainObject(el) && matchesPathAt(getOwnField(el, part), path, i + 1, pred)) return true;
    }
    return false;
  }
  if (isPlainObject(value)) return matchesPathAt(getOwnField(value, part), path, i + 1, pred);
  return matchesLeaf(undefined, pred);
}

/** Value of an aggregation field path (arrays along the path map over their document elements). */
function resolveExprPath(value: unknown, path: ReadonlyArray<string>, i: number): unknown {
  if (i === path.length) return value;
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const el of value) {
      if (!isPlainObject(el) && !Array.isArray(el)) continue;
      const r = resolveExprPath(el, path, i);
      if (r !== undefined) out.push(r);
    }
    return out;
  }
  if (isPlainObject(value)) return resolveExprPath(getOwnField(value, path[i] as string), path, i + 1);
  return undefined;
}

function evalExprOperand(doc: unknown, operand: ExprOperand): unknown {
  switch (operand.kind) {
    case 'literal':
      return operand.value;
    case 'path':
      return resolveExprPath(doc, operand.path, 0);
    case 'typeOf': {
      const v = resolveExprPath(doc, operand.path, 0);
      return v === undefined ? 'missing' : (TYPE_NAMES.get(bsonTypeOf(v)) ?? 'unknown');
    }
    default: {
      const never: never = operand;
      return never;
    }
  }
}

function matchesNode(doc: unknown, node: QueryNode): boolean {
  switch (node.kind) {
    case 'mingo':
      try {
        // mingo sees the numbers as the driver promotes them (an int64 or integral double by its value).
        return node.query.test(mingoValue(doc) as Record<string, unknown>);
      } catch (error) {
        // An expression mingo can only refuse while evaluating ($expr operands...): MongoDB's typed error.
        throw toMongoError(error);
      }
    case 'and':
      for (const c of node.children) if (!matchesNode(doc, c)) return false;
      return true;
    case 'or':
      for (const c of node.children) if (matchesNode(doc, c)) return true;
      return false;
    case 'nor':
      for (const c of node.children) if (matchesNode(doc, c)) return false;
      return true;
    case 'path':
      return matchesPathAt(doc, node.path, 0, node.pred);
    case 'notPath':
      for (const p of node.preds) if (!matchesPathAt(doc, node.path, 0, p)) return true;
      return false;
    case 'exprCompare': {
      const equal = compareBsonValues(evalExprOperand(doc, node.lhs), evalExprOperand(doc, node.rhs)) === 0;
      return node.op === 'eq' ? equal : !equal;
    }
    default: {
      const never: never = node;
      return never;
    }
  }
}

/**
 * Whether a document matches a compiled filter.
 *
 * @param compiled - an `exact` result of {@link compileFilter}.
 * @param doc - a document (values are js-bson classes or primitives).
 * @returns `true` when the document matches.
 */
export function matchesCompiledFilter(
  compiled: Extract<CompiledFilter, { kind: 'exact' }>,
  doc: object,
): boolean {
  return matchesNode(doc, compiled.root);
}

/**
 * A filter ready to test documents: exact BSON semantics for every condition {@link compileFilter}
 * supports; each other condition (operators such as `$where`, `$jsonSchema`, geo and bitwise operators,
 * `$expr` beyond a few comparisons) by mingo's `Query`, on the document's numbers as the MongoDB driver
 * promotes them (mingo-values.ts: a `Decimal128`, or a `Long` beyond 2^53, is still opaque to it).
 *
 * @example
 * ```ts
 * const q = new BsonQuery({ 'control.max.v': { $_internalExprGte: 5 } });
 * q.test(bucket);
 * ```
 */
export class BsonQuery {
  /**
   * How the filter is evaluated: `'exact'` (this module alone) or `'mingo'` (some of its conditions by
   * mingo, the others exactly).
   */
  readonly mode: 'exact' | 'mingo';
  readonly #root: QueryNode;

  /**
   * @param filter - a MongoDB query filter.
   */
  constructor(filter: QueryFilter) {
    const compiled = compileFilter(filter);
    this.mode = compiled.kind === 'exact' ? 'exact' : 'mingo';
    // The conditions mingo cannot be spared go to it one by one: a bucket filter's internal operators
    // (`$_internalExprGte`...), which mingo does not know, stay here beside a `$bitsAllSet` on `meta`.
    this.#root = compiled.kind === 'exact' ? compiled.root : compileNode(filter, true);
  }

  /**
   * Whether `doc` matches.
   *
   * @param doc - a document.
   * @returns `true` on a match.
   */
  test(doc: object): boolean {
    return matchesNode(doc, this.#root);
  }
}

// ---------------------------------------------------------------------------------------------------
// Sorting
// ---------------------------------------------------------------------------------------------------

/** A MongoDB sort specification: field paths with 1 (ascending) or -1 (descending). */
export type SortSpec = Readonly<Record<string, 1 | -1>>;

/** A sort specification compiled into paths, built once per sort (it caches each document's sort key). */
export interface CompiledSort {
  /** The sort keys in order. */
  readonly keys: ReadonlyArray<{ readonly path: ReadonlyArray<string>; readonly direction: 1 | -1 }>;
  /** Each document's sort key, computed once for the comparisons of one sort. */
  readonly sortKeys: WeakMap<object, ReadonlyArray<unknown>>;
}

/**
 * Compile a sort specification.
 *
 * @param sort - `{ path: 1 | -1, ... }`.
 * @returns the compiled sort.
 */
export function compileSort(sort: SortSpec): CompiledSort {
  return {
    keys: Object.keys(sort).map((k) => ({
      path: splitPath(k),
      direction: bsonNumberValue(sort[k]) === -1 ? -1 : 1,
    })),
    sortKeys: new WeakMap(),
  };
}

/** A path component that indexes an array by position (digits, no leading zero). */
function isPositional(component: string): boolean {
  return /^(0|[1-9][0-9]*)$/.test(component);
}

/** A sort field still to be followed from the current sub-document: its place in the key and its path. */
interface PendingField {
  readonly k: number;
  readonly path: ReadonlyArray<string>;
  readonly i: number;
}

/**
 * The keys an index on the sort's paths would hold for `from`, as the server's key generator makes them
 * (its sort keys are those keys): each path is followed through sub-documents; a positional component
 * (`a.0`) picks an array element; the first array a path meets otherwise is expanded, its elements
 * giving one key each, shared by every path that meets the same array (`a.b` and `a.c` over one array of
 * documents pair each element's `b` with its own `c`); an array at the end of a path is expanded one
 * level (an empty one is BSON undefined); a missing value is null.
 *
 * @throws {@link TimeseriesError} `BadValue` when two paths meet different arrays (parallel arrays).
 */
function indexKeys(
  from: unknown,
  pending: ReadonlyArray<PendingField>,
  fixed: unknown[],
  out: unknown[][],
): void {
  let array: unknown[] | undefined;
  const onArray: PendingField[] = [];
  const key = fixed.slice();
  for (const field of pending) {
    let v = from;
    let i = field.i;
    let positional = false;
    for (;;) {
      if (i === field.path.length) {
        if (Array.isArray(v) && !positional) {
          if (array !== undefined && array !== v) throw parallelArrays();
          array = v;
          onArray.push({ k: field.k, path: field.path, i });
        } else key[field.k] = v;
        break;
      }
      const component = field.path[i] as string;
      if (Array.isArray(v)) {
        if (isPositional(component)) {
          v = v[Number(component)];
          positional = true;
          i++;
          if (v === undefined) {
            key[field.k] = null;
            break;
          }
          continue;
        }
        if (array !== undefined && array !== v) throw parallelArrays();
        array = v;
        onArray.push({ k: field.k, path: field.path, i });
        break;
      }
      const next = isPlainObject(v) ? getOwnField(v, component) : undefined;
      if (next === undefined) {
        key[field.k] = null;
        break;
      }
      v = next;
      positional = false;
      i++;
    }
  }
  if (array === undefined) {
    out.push(key);
    return;
  }
  if (array.length === 0) {
    // An empty array ending a path is undefined (below null); one on the way has nothing below it.
    for (const field of onArray) key[field.k] = field.i === field.path.length ? undefined : null;
    out.push(key);
    return;
  }
  for (const element of array) {
    const deeper: PendingField[] = [];
    const elementKey = key.slice();
    for (const field of onArray) {
      if (field.i === field.path.length) elementKey[field.k] = element;
      else if (isPlainObject(element)) deeper.push(field);
      else elementKey[field.k] = null;
    }
    if (deeper.length === 0) out.push(elementKey);
    else indexKeys(element, deeper, elementKey, out);
  }
}

function parallelArrays(): TimeseriesError {
  return new TimeseriesError('BadValue', 'cannot sort with keys that are parallel arrays');
}

/** Compare two sort keys by the sort's directions (BSON order, component by component). */
function compareKeys(a: ReadonlyArray<unknown>, b: ReadonlyArray<unknown>, sort: CompiledSort): number {
  for (let k = 0; k < sort.keys.length; k++) {
    // `undefined` (an empty array) is BSON undefined, below null.
    const c = compareBsonValues(a[k], b[k]);
    if (c !== 0) return (sort.keys[k] as { direction: 1 | -1 }).direction === 1 ? c : -c;
  }
  return 0;
}

/**
 * A document's sort key: of the keys {@link indexKeys} makes, the one that sorts first (the server sorts
 * a document by the smallest of its keys in the sort's order, `a: [1, 5]` ascending as 1, descending as 5).
 */
function sortKeyOf(doc: object, sort: CompiledSort): ReadonlyArray<unknown> {
  const cached = sort.sortKeys.get(doc);
  if (cached !== undefined) return cached;
  const keys: unknown[][] = [];
  indexKeys(
    doc,
    sort.keys.map((key, k) => ({ k, path: key.path, i: 0 })),
    new Array<unknown>(sort.keys.length).fill(null),
    keys,
  );
  let best = keys[0] as unknown[];
  for (let i = 1; i < keys.length; i++)
    if (compareKeys(keys[i] as unknown[], best, sort) < 0) best = keys[i] as unknown[];
  sort.sortKeys.set(doc, best);
  return best;
}

/**
 * Compare two documents by a compiled sort, with MongoDB's value order ({@link compareBsonValues}) over
 * the sort keys the server makes (see {@link sortKeyOf}): a missing field sorts as null, an empty array
 * below it.
 *
 * @param a - first document.
 * @param b - second document.
 * @param sort - the compiled sort.
 * @returns negative, zero or positive.
 * @throws {@link TimeseriesError} `BadValue` for a document whose sort paths meet parallel arrays.
 */
export function compareBySort(a: object, b: object, sort: CompiledSort): number {
  return compareKeys(sortKeyOf(a, sort), sortKeyOf(b, sort), sort);
}
