/**
 * The mingo context every mingo evaluation of tsbuckets runs in, and the `Aggregator` it runs pipelines
 * with: mingo's operators, with those whose results differ from the server's replaced (the table in
 * `mingo-operators.ts`).
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

import { kAccumulators, kExpressions, kStages } from './mingo-operators.js';

/**
 * mingo's operators with the server's where they differ (`mingo-operators.ts`). Every mingo evaluation of
 * tsbuckets runs in it (pipelines, filters, projections).
 */
export const kMingoContext: Context = Context.init({
  accumulator: { ...accumulatorOperators, ...kAccumulators },
  expression: { ...expressionOperators, ...kExpressions },
  pipeline: { ...pipelineOperators, ...kStages },
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
