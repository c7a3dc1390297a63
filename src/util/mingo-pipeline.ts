/**
 * The mingo `Aggregator` tsbuckets runs pipelines with: mingo's operators, with the accumulators whose
 * results differ from the server's replaced. mingo's `$top` and `$bottom` are its `$topN` and `$bottomN`
 * with `n: 1`, so they return a one-element array; the server returns the element itself.
 *
 * Scripts are enabled, because mingo's own `$setWindowFields` evaluates each window through an internal
 * `$function`: only for a pipeline `checkPipeline` (query-validation.ts) accepted, which has refused every
 * `$where`, `$function` and `$accumulator` the caller wrote, at any depth, so the only scripts mingo runs
 * are its own.
 *
 * @packageDocumentation
 */
import { Aggregator } from 'mingo/aggregator';
import { Context } from 'mingo/core';
import * as accumulatorOperators from 'mingo/operators/accumulator';
import * as expressionOperators from 'mingo/operators/expression';
import * as pipelineOperators from 'mingo/operators/pipeline';
import * as projectionOperators from 'mingo/operators/projection';
import * as queryOperators from 'mingo/operators/query';
import * as windowOperators from 'mingo/operators/window';

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

const kContext = Context.init({
  accumulator: { ...accumulatorOperators, $top, $bottom },
  expression: expressionOperators,
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
  return new Aggregator(pipeline, { ...options, scriptEnabled: true, context: kContext });
}
