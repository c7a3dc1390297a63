/**
 * In-place evaluation of the one aggregation-pipeline update shape tsbuckets emits: `$replaceWith` stages
 * whose expression is nested `$setField` / `$getField` over `$$ROOT`, with names and values in `$literal`
 * (see `makeBucketUpdate` in `bucket-format/bucket-document.ts`). This is how a commit writes fields whose
 * names cannot appear in a dotted path (`a.b`, `$x`, `__proto__`).
 *
 * Evaluated in place, the cost is the length of the path, not the size of the bucket; an existing field
 * keeps its position and a new one is appended, as `$setField` does.
 *
 * @packageDocumentation
 */
import { defineField, getOwnField } from '../util/safe-record.js';

type Expr = Readonly<Record<string, unknown>>;

/**
 * Whether every stage of `pipeline` has the shape this module evaluates.
 *
 * @param pipeline - an update pipeline.
 * @returns `true` when {@link applySetFieldPipeline} can apply it.
 */
export function isSetFieldPipeline(pipeline: ReadonlyArray<Readonly<Record<string, unknown>>>): boolean {
  return pipeline.every((stage) => {
    const keys = Object.keys(stage);
    return keys.length === 1 && keys[0] === '$replaceWith' && isSetField(stage.$replaceWith, '$$ROOT');
  });
}

/**
 * Apply a set-field pipeline to `doc` in place.
 *
 * @param doc - the stored document.
 * @param pipeline - stages accepted by {@link isSetFieldPipeline}.
 */
export function applySetFieldPipeline(
  doc: Record<string, unknown>,
  pipeline: ReadonlyArray<Readonly<Record<string, unknown>>>,
): void {
  for (const stage of pipeline) evaluate(doc, stage.$replaceWith as Expr);
}

function literal(expr: unknown): unknown {
  return (expr as Expr).$literal;
}

function isSetField(expr: unknown, input: unknown): boolean {
  if (typeof expr !== 'object' || expr === null) return false;
  const spec = (expr as Expr).$setField as Expr | undefined;
  if (spec === undefined || typeof literal(spec.field) !== 'string' || !isInput(spec.input, input))
    return false;
  const value = spec.value as Expr;
  return '$literal' in value || isSetField(value, { $getField: { field: spec.field, input: spec.input } });
}

function isInput(expr: unknown, expected: unknown): boolean {
  return JSON.stringify(expr) === JSON.stringify(expected);
}

/** Evaluate a `$setField` expression whose input is `target`; mutates and returns `target`. */
function evaluate(target: Record<string, unknown>, expr: Expr): Record<string, unknown> {
  const spec = expr.$setField as Expr;
  const field = literal(spec.field) as string;
  const value = spec.value as Expr;
  if ('$literal' in value) {
    defineField(target, field, value.$literal);
    return target;
  }
  let child = getOwnField(target, field);
  if (typeof child !== 'object' || child === null) {
    child = {};
    defineField(target, field, child);
  }
  evaluate(child as Record<string, unknown>, value);
  return target;
}
