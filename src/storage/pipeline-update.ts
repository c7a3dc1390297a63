/**
 * A fast path for update pipelines made of `$set`/`$addFields` and `$unset` stages over top-level fields
 * whose expressions use a small set of operators (`$ifNull`, `$filter`, `$map`, `$cond`, `$in`, `$eq`,
 * `$lt`, `$lte`, `$gt`, `$gte`, `$add`, `$subtract`, `$max`, `$mergeObjects`, `$concatArrays`,
 * `$literal`), evaluated with MongoDB's semantics (BSON order for comparisons, missing values skipped by
 * `$max`, field paths through arrays yielding arrays). Anything else is refused and the caller applies the
 * pipeline with mingo.
 *
 * Rolling rollups send one such pipeline per entity and step on every commit; mingo interprets each one
 * in about a millisecond, this in microseconds.
 *
 * @packageDocumentation
 */
import { compareBsonValues, isPlainObject } from '../util/bson-value.js';
import { defineField } from '../util/safe-record.js';

/** Thrown inside the evaluator for an unsupported shape; never escapes {@link applyPipelineUpdate}. */
class Unsupported extends Error {}

type Vars = ReadonlyMap<string, unknown>;

/**
 * Apply an update pipeline to a document.
 *
 * @param doc - the current document (not mutated).
 * @param pipeline - the stages.
 * @returns the new document, or `undefined` when the pipeline has a shape this path does not handle.
 */
export function applyPipelineUpdate(
  doc: Readonly<Record<string, unknown>>,
  pipeline: ReadonlyArray<Readonly<Record<string, unknown>>>,
): Record<string, unknown> | undefined {
  try {
    let current: Record<string, unknown> = { ...doc };
    for (const stage of pipeline) {
      const keys = Object.keys(stage);
      if (keys.length !== 1) return undefined;
      const op = keys[0] as string;
      const spec = stage[op];
      if (op === '$set' || op === '$addFields') {
        if (!isPlainObject(spec)) return undefined;
        const next = { ...current };
        for (const field of Object.keys(spec)) {
          if (field.includes('.') || field.startsWith('$')) return undefined;
          const value = evaluate(spec[field], current, new Map());
          if (value === undefined) Reflect.deleteProperty(next, field);
          else defineField(next, field, value);
        }
        current = next;
      } else if (op === '$unset') {
        const fields = typeof spec === 'string' ? [spec] : spec;
        if (!Array.isArray(fields)) return undefined;
        for (const field of fields as unknown[]) {
          if (typeof field !== 'string' || field.includes('.')) return undefined;
          Reflect.deleteProperty(current, field);
        }
      } else {
        return undefined;
      }
    }
    return current;
  } catch (error) {
    if (error instanceof Unsupported) return undefined;
    throw error;
  }
}

function evaluate(expr: unknown, root: Readonly<Record<string, unknown>>, vars: Vars): unknown {
  if (typeof expr === 'string') {
    if (expr.startsWith('$$')) {
      const [name, ...path] = expr.slice(2).split('.');
      if (name === undefined || !vars.has(name)) throw new Unsupported();
      return resolvePath(vars.get(name), path);
    }
    if (expr.startsWith('$')) return resolvePath(root, expr.slice(1).split('.'));
    return expr;
  }
  if (Array.isArray(expr)) return expr.map((e: unknown) => evaluate(e, root, vars));
  if (!isPlainObject(expr)) return expr;
  const keys = Object.keys(expr);
  const op = keys[0];
  if (keys.length === 1 && op !== undefined && op.startsWith('$')) return operator(op, expr[op], root, vars);
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    if (key.startsWith('$')) throw new Unsupported();
    const value = evaluate(expr[key], root, vars);
    if (value !== undefined) defineField(out, key, value);
  }
  return out;
}

function operator(op: string, arg: unknown, root: Readonly<Record<string, unknown>>, vars: Vars): unknown {
  const args = (): unknown[] => {
    if (!Array.isArray(arg)) throw new Unsupported();
    return arg.map((a: unknown) => evaluate(a, root, vars));
  };
  switch (op) {
    case '$literal':
      return arg;
    case '$ifNull': {
      const values = args();
      for (let i = 0; i < values.length - 1; i++)
        if (values[i] !== undefined && values[i] !== null) return values[i];
      return values[values.length - 1];
    }
    case '$cond': {
      const [c, t, e] = Array.isArray(arg)
        ? (arg as unknown[])
        : isPlainObject(arg)
          ? [arg.if, arg.then, arg.else]
          : [];
      return evaluate(truthy(evaluate(c, root, vars)) ? t : e, root, vars);
    }
    case '$in': {
      const [x, list] = args();
      if (!Array.isArray(list)) throw new Unsupported();
      return list.some((v: unknown) => compareBsonValues(x, v) === 0);
    }
    case '$eq':
    case '$lt':
    case '$lte':
    case '$gt':
    case '$gte': {
      const [a, b] = args();
      const c = compareBsonValues(a ?? null, b ?? null);
      return op === '$eq'
        ? c === 0
        : op === '$lt'
          ? c < 0
          : op === '$lte'
            ? c <= 0
            : op === '$gt'
              ? c > 0
              : c >= 0;
    }
    case '$add': {
      let date: number | undefined;
      let sum = 0;
      for (const v of args()) {
        if (v === undefined || v === null) return null;
        if (v instanceof Date) {
          if (date !== undefined) throw new Unsupported();
          date = v.getTime();
        } else if (typeof v === 'number') sum += v;
        else throw new Unsupported();
      }
      return date === undefined ? sum : new Date(date + sum);
    }
    case '$subtract': {
      const [a, b] = args();
      if (a === undefined || a === null || b === undefined || b === null) return null;
      if (a instanceof Date && typeof b === 'number') return new Date(a.getTime() - b);
      if (a instanceof Date && b instanceof Date) return a.getTime() - b.getTime();
      if (typeof a === 'number' && typeof b === 'number') return a - b;
      throw new Unsupported();
    }
    case '$max': {
      // One operand: the largest element of an array; several: the largest operand. Null and missing are
      // skipped; nothing left gives null.
      let values = Array.isArray(arg) ? args() : [evaluate(arg, root, vars)];
      if (!Array.isArray(arg) && Array.isArray(values[0])) values = values[0] as unknown[];
      let best: unknown = null;
      for (const v of values)
        if (v !== undefined && v !== null && (best === null || compareBsonValues(v, best) > 0)) best = v;
      return best;
    }
    case '$mergeObjects': {
      const out: Record<string, unknown> = {};
      for (const v of args()) {
        if (v === undefined || v === null) continue;
        if (!isPlainObject(v)) throw new Unsupported();
        for (const k of Object.keys(v)) defineField(out, k, v[k]);
      }
      return out;
    }
    case '$concatArrays': {
      const out: unknown[] = [];
      for (const v of args()) {
        if (v === undefined || v === null) return null;
        if (!Array.isArray(v)) throw new Unsupported();
        out.push(...(v as unknown[]));
      }
      return out;
    }
    case '$filter':
    case '$map': {
      if (!isPlainObject(arg)) throw new Unsupported();
      const input = evaluate(arg.input, root, vars);
      if (input === undefined || input === null) return null;
      if (!Array.isArray(input)) throw new Unsupported();
      const name = typeof arg.as === 'string' ? arg.as : 'this';
      const body = op === '$filter' ? arg.cond : arg.in;
      const out: unknown[] = [];
      for (const element of input as unknown[]) {
        const scope = new Map(vars);
        scope.set(name, element);
        const value = evaluate(body, root, scope);
        if (op === '$map') out.push(value === undefined ? null : value);
        else if (truthy(value)) out.push(element);
      }
      return out;
    }
    default:
      throw new Unsupported();
  }
}

/** MongoDB's truthiness: false, null, missing, 0 are false. */
function truthy(v: unknown): boolean {
  return !(v === false || v === null || v === undefined || v === 0);
}

/** A field path: through documents, and through arrays element by element (missing elements skipped). */
function resolvePath(value: unknown, path: ReadonlyArray<string>): unknown {
  let node = value;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i] as string;
    if (Array.isArray(node)) {
      const rest = path.slice(i);
      const out: unknown[] = [];
      for (const element of node as unknown[]) {
        if (!isPlainObject(element) && !Array.isArray(element)) continue;
        const v = resolvePath(element, rest);
        if (v !== undefined) out.push(v);
      }
      return out;
    }
    if (!isPlainObject(node) || !Object.hasOwn(node, segment)) return undefined;
    node = node[segment];
  }
  return node;
}
