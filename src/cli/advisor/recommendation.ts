/**
 * Choosing among the replayed candidates, with the reason in words.
 *
 * The rule, in order:
 * 1. Storage: keep the candidates whose compressed bytes per measurement are within
 *    {@link kCompressionTolerance} of the best (buckets that are too small compress badly and multiply
 *    index entries; past a few hundred measurements a bucket compresses about as well as it can).
 * 2. Reads: among those, take the one whose time-range queries unpack the fewest measurements per
 *    measurement returned (spans far longer than the data needs make each query unpack whole long
 *    buckets for a few measurements).
 * 3. Ties (within {@link kTieTolerance}): a granularity before a custom span (simpler, and what the server's
 *    tools know), then the shorter span (less memory per open bucket, tighter time bounds).
 *
 * @packageDocumentation
 */
import { invariant } from '../../util/invariant.js';
import { formatDuration } from '../arguments.js';
import { formatNumber } from '../summary.js';
import { candidateLabel } from './candidates.js';
import type { CandidateResult } from './replay.js';
import { kClosureReasons } from '../summary.js';

/** Candidates within this fraction of the best compression are kept. */
export const kCompressionTolerance = 0.15;
/** Query costs within this fraction are a tie. */
export const kTieTolerance = 0.05;

/** The advisor's choice. */
export interface Recommendation {
  /** The chosen candidate. */
  readonly result: CandidateResult;
  /** Why, in one sentence. */
  readonly reason: string;
}

/**
 * Compressed bytes per stored measurement.
 *
 * @param r - a candidate's result.
 * @returns the bytes, `Infinity` when nothing was stored.
 */
export function bytesPerMeasurement(r: CandidateResult): number {
  return r.measurements === 0 ? Infinity : r.compressedBytes / r.measurements;
}

/**
 * Measurements unpacked per measurement returned by the queries.
 *
 * @param r - a candidate's result.
 * @returns the ratio (1 when the queries returned nothing and unpacked nothing).
 */
export function unpackedPerReturned(r: CandidateResult): number {
  if (r.measurementsReturned === 0) return r.measurementsUnpacked === 0 ? 1 : Infinity;
  return r.measurementsUnpacked / r.measurementsReturned;
}

function mainClosure(r: CandidateResult): string | undefined {
  let best: [string, number] | undefined;
  for (const [name, label] of kClosureReasons) {
    const n = r.counters[name] ?? 0;
    if (n > 0 && (best === undefined || n > best[1])) best = [label, n];
  }
  return best?.[0];
}

/**
 * Choose a candidate.
 *
 * @param results - the replayed candidates (at least one).
 * @param cadenceMs - the sample's cadence, if known.
 * @param queryWidthSeconds - the width of the queries.
 * @returns the choice and its reason.
 */
export function recommend(
  results: ReadonlyArray<CandidateResult>,
  cadenceMs: number | undefined,
  queryWidthSeconds: number,
): Recommendation {
  const bestBytes = Math.min(...results.map(bytesPerMeasurement));
  const kept = results.filter((r) => bytesPerMeasurement(r) <= bestBytes * (1 + kCompressionTolerance));
  const leastRead = Math.min(...kept.map(unpackedPerReturned));
  const tied = kept.filter((r) => unpackedPerReturned(r) <= leastRead * (1 + kTieTolerance));
  tied.sort(
    (a, b) =>
      (a.candidate.kind === 'preset' ? 0 : 1) - (b.candidate.kind === 'preset' ? 0 : 1) ||
      a.candidate.spanSeconds - b.candidate.spanSeconds,
  );
  const result = tied[0];
  invariant(result !== undefined, 7001, 'the advisor has no candidate to recommend');
  const perBucket = result.buckets === 0 ? 0 : result.measurements / result.buckets;
  const closedBy = mainClosure(result);
  const bytes = bytesPerMeasurement(result);
  const cadence =
    cadenceMs === undefined
      ? 'With no series reporting twice in the sample'
      : `With one measurement every ${formatCadence(cadenceMs)} per series`;
  const compression =
    bytes <= bestBytes
      ? 'the best compression of the candidates'
      : `${formatNumber(((bytes - bestBytes) / bestBytes) * 100)}% above the best compression (${formatNumber(bestBytes, 1)})`;
  const tolerance = `${kCompressionTolerance * 100}%`;
  const reads =
    kept.length === 1
      ? `and no other candidate compresses within ${tolerance} of the best`
      : `the fewest of the ${kept.length} candidates within ${tolerance} of the best compression`;
  return {
    result,
    reason:
      `${describeCandidate(result)}. ${cadence}, its buckets hold ${formatNumber(perBucket, 0)} measurements` +
      `${closedBy === undefined ? ' (none closed within the sample)' : ` (mostly closed by ${closedBy})`} at ${formatNumber(bytes, 1)} bytes ` +
      `per measurement, ${compression}; a ${formatDuration(queryWidthSeconds)} query unpacks ` +
      `${formatNumber(unpackedPerReturned(result), 1)} measurements per measurement returned, ${reads}.`,
  };
}

/**
 * A candidate as the options to pass, for the recommendation sentence.
 *
 * @param r - a candidate's result.
 * @returns `granularity 'seconds'` or `custom span 15m (bucketMaxSpanSeconds = bucketRoundingSeconds = 900)`.
 */
export function describeCandidate(r: CandidateResult): string {
  const c = r.candidate;
  return c.kind === 'preset'
    ? `granularity '${c.granularity}'`
    : `${candidateLabel(c)} (bucketMaxSpanSeconds = bucketRoundingSeconds = ${c.spanSeconds})`;
}

/**
 * A cadence in the largest unit that keeps it readable (`250ms`, `10s`, `1.5m`, `1h`).
 *
 * @param ms - milliseconds.
 * @returns the text.
 */
export function formatCadence(ms: number): string {
  if (ms < 1000) return `${formatNumber(ms)}ms`;
  const seconds = ms / 1000;
  if (Number.isInteger(seconds)) return formatDuration(seconds);
  for (const [unit, size] of [
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (seconds >= size) return `${formatNumber(seconds / size, 1)}${unit}`;
  }
  return `${formatNumber(seconds, 1)}s`;
}
