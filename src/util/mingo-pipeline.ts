/**
 * The mingo context every mingo evaluation of tsbuckets runs in, and the `Aggregator` it runs pipelines
 * with: mingo's operators, with those whose results differ from the server's replaced. mingo's `$top` and
 * `$bottom` are its `$topN` and `$bottomN` with `n: 1`, so they return a one-element array; the server
 * returns the element itself. mingo's comparison expressions (`$eq`, `$gt`, `$cmp`...) compare values of
 * different types as unequal and unordered; the server orders them by BSON order.
 *
 * Scripts are enabled, because mingo's own `$setWindowFields` evaluates each window through an internal
 * `$function`: only for a pipeline `checkPipeline` (query-validation.ts) accepted, which has refused every
 * `$where`, `$function` and `$accumulator` the caller wrote, at any depth, so the only scripts mingo runs
 * are its own.
 *
 * @packageDocumentation
 */
import { Aggregator } from 'mingo/aggregator';
import { Context, evalExpr } from 'mingo/core';
import * as accumulatorOperators from 'mingo/operators/accumulator';
import * as expressionOperators from 'mingo/operators/expression';
import * as pipelineOperators from 'mingo/operators/pipeline';
import * as projectionOperators from 'mingo/operators/projection';
import * as queryOperators from 'mingo/operators/query';
import * as windowOperators from 'mingo/operators/window';

import { TimeseriesError } from '../errors.js';
import { compareBsonValues } from './bson-value.js';

type TopNArguments = Parameters<typeof accumulatorOperators.$topN>;

/** The server's `$top`: the first output by the sort, not an array of it. */
function $top(coll: TopNArguments[0], expr: Omit<TopNArguments[1], 'n'>, options: TopNArguments[2]): unknown {
  return accumulatorOperators.$topN(coll, { ...expr, n: 1 }, options)[0];
}

/** The server's `$bottom`: the last output by the sort, not an array of it. */
function $bottom(
  coll: TopNArguments[0],
  expr: Omit<TopNArguments[1], 'n'>,
  options: TopNArguments[2],
): unknown {
  return accumulatorOperators.$bottomN(coll, { ...expr, n: 1 }, options)[0];
}

type ExpressionArguments = Parameters<typeof expressionOperators.$gt>;

/**
 * A comparison expression (`$eq`, `$gt`...) with the server's semantics: the two operands compared in
 * BSON order across types (a string is above every number, null and a missing field below them, a
 * missing field below null: `{$eq: ['$missing', null]}` is false), where mingo compared only values of one
 * type and answered `false` otherwise.
 */
function comparison(name: string, test: (c: number) => boolean) {
  return (
    obj: ExpressionArguments[0],
    expr: ExpressionArguments[1],
    options: ExpressionArguments[2],
  ): boolean => {
    const args = evalExpr(obj, expr, options);
    if (!Array.isArray(args) || args.length !== 2) {
      const n = Array.isArray(args) ? args.length : 1;
      throw new TimeseriesError(
        'Location16020',
        `Expression ${name} takes exactly 2 arguments. ${n} were passed in.`,
      );
    }
    return test(compareBsonValues(args[0], args[1]));
  };
}

/** The server's `$cmp`: -1, 0 or 1 by BSON order across types. */
function $cmp(
  obj: ExpressionArguments[0],
  expr: ExpressionArguments[1],
  options: ExpressionArguments[2],
): number {
  const args = evalExpr(obj, expr, options);
  if (!Array.isArray(args) || args.length !== 2) {
    const n = Array.isArray(args) ? args.length : 1;
    throw new TimeseriesError(
      'Location16020',
      `Expression $cmp takes exactly 2 arguments. ${n} were passed in.`,
    );
  }
  return Math.sign(compareBsonValues(args[0], args[1]));
}

/** The comparison expressions, in BSON order (see {@link comparison}). */
const kComparisons: Readonly<Record<string, (...args: ExpressionArguments) => boolean | number>> = {
  $eq: comparison('$eq', (c) => c === 0),
  $ne: comparison('$ne', (c) => c !== 0),
  $gt: comparison('$gt', (c) => c > 0),
  $gte: comparison('$gte', (c) => c >= 0),
  $lt: comparison('$lt', (c) => c < 0),
  $lte: comparison('$lte', (c) => c <= 0),
  $cmp,
};

/**
 * mingo's operators with the server's where they differ: `$top`/`$bottom`, the comparison expressions.
 * Every mingo evaluation of tsbuckets runs in it (pipelines, filters, projections).
 */
export const kMingoContext: Context = Context.init({
  accumulator: { ...accumulatorOperators, $top, $bottom },
  expression: { ...expressionOperators, ...kComparisons },
  pipeline: pipelineOperators,
  projection: projectionOperators,
  query: queryOperators,
  window: windowOperators,
});

/** Options of {@link pipelineAggregator} (mingo's, but for its operators and scripts). */
export type PipelineAggregatorOptions = Omit<
  NonNullable<ConstructorParameters<typeof Aggregator>[1]>,
  'context' | 'scriptEnabled'
>;

/**
 * A mingo `Aggregator` over tsbuckets' operators, scripts enabled (see the module comment).
 *
 * @param pipeline - the stages, accepted by `checkPipeline`.
 * @param options - mingo's options.
 * @returns the aggregator.
 */
export function pipelineAggregator(
  pipeline: ConstructorParameters<typeof Aggregator>[0],
  options: PipelineAggregatorOptions = {},
): Aggregator {
  return new Aggregator(pipeline, { ...options, scriptEnabled: true, context: kMingoContext });
}
