/**
 * The bucketing options the advisor tries: MongoDB's three granularities, and custom spans derived from
 * the data's cadence — the span in which a series fills a bucket to the count limit
 * (`cadence × timeseriesBucketMaxCount`), and a tenth of it (smaller buckets, less read per query) —
 * each rounded to the nearest round duration.
 *
 * @packageDocumentation
 */
import { GRANULARITY_PRESETS, MAX_BUCKETING_SECONDS } from '../../options.js';
import type { Granularity } from '../../options.js';
import { formatDuration } from '../arguments.js';

/** One bucketing choice. */
export type Candidate =
  | {
      readonly kind: 'preset';
      /** The granularity. */
      readonly granularity: Granularity;
      /** Its `bucketMaxSpanSeconds`. */
      readonly spanSeconds: number;
      /** Its `bucketRoundingSeconds`. */
      readonly roundingSeconds: number;
    }
  | {
      readonly kind: 'custom';
      /** `bucketMaxSpanSeconds` and `bucketRoundingSeconds`. */
      readonly spanSeconds: number;
      readonly roundingSeconds: number;
    };

/** Round durations, in seconds: the custom spans are taken from these. */
export const kRoundSpans: ReadonlyArray<number> = Object.freeze([
  1,
  2,
  5,
  10,
  15,
  30,
  60,
  120,
  300,
  600,
  900,
  1800,
  3600,
  7200,
  10800,
  21600,
  43200,
  86400,
  172800,
  604800,
  1209600,
  2592000,
  5184000,
  7776000,
  15552000,
  MAX_BUCKETING_SECONDS,
]);

/**
 * The round duration nearest to `seconds` (on a logarithmic scale).
 *
 * @param seconds - a positive duration.
 * @returns an element of {@link kRoundSpans}.
 */
export function nearestRoundSpan(seconds: number): number {
  let best = 1;
  for (const span of kRoundSpans) {
    if (Math.abs(Math.log(span / seconds)) < Math.abs(Math.log(best / seconds))) best = span;
  }
  return best;
}

/**
 * The candidates for a cadence.
 *
 * @param cadenceMs - the sample's cadence, or `undefined` (then only the three granularities).
 * @param maxCount - `timeseriesBucketMaxCount`.
 * @returns presets first, then custom spans in increasing order (none equal to a preset's span).
 */
export function candidatesFor(cadenceMs: number | undefined, maxCount: number): Candidate[] {
  const presets: Candidate[] = (['seconds', 'minutes', 'hours'] as const).map((granularity) => ({
    kind: 'preset',
    granularity,
    spanSeconds: GRANULARITY_PRESETS[granularity].bucketMaxSpanSeconds,
    roundingSeconds: GRANULARITY_PRESETS[granularity].bucketRoundingSeconds,
  }));
  if (cadenceMs === undefined) return presets;
  const fill = (cadenceMs / 1000) * maxCount;
  const spans = new Set([nearestRoundSpan(fill / 10), nearestRoundSpan(fill)]);
  const custom: Candidate[] = [...spans]
    .filter((span) => !presets.some((p) => p.spanSeconds === span))
    .sort((a, b) => a - b)
    .map((span) => ({ kind: 'custom', spanSeconds: span, roundingSeconds: span }));
  return [...presets, ...custom];
}

/**
 * How a candidate is named in the table (`seconds`, `custom 15m`).
 *
 * @param candidate - a candidate.
 * @returns the label.
 */
export function candidateLabel(candidate: Candidate): string {
  return candidate.kind === 'preset'
    ? candidate.granularity
    : `custom ${formatDuration(candidate.spanSeconds)}`;
}

/**
 * The `timeseries` options that select a candidate (besides the time field and metaField).
 *
 * @param candidate - a candidate.
 * @returns `{ granularity }` or `{ bucketMaxSpanSeconds, bucketRoundingSeconds }`.
 */
export function candidateOptions(candidate: Candidate): Record<string, unknown> {
  return candidate.kind === 'preset'
    ? { granularity: candidate.granularity }
    : { bucketMaxSpanSeconds: candidate.spanSeconds, bucketRoundingSeconds: candidate.roundingSeconds };
}
