/**
 * The advisor's output: the sample's profile, the table of candidates and the recommendation.
 *
 * @packageDocumentation
 */
import { formatDuration } from '../arguments.js';
import { formatBytes, formatClosures, formatNumber } from '../summary.js';
import { renderTable } from '../table.js';
import { candidateLabel } from './candidates.js';
import type { Recommendation } from './recommendation.js';
import { bytesPerMeasurement, formatCadence, unpackedPerReturned } from './recommendation.js';
import type { CandidateResult } from './replay.js';
import { queryStarts } from './replay.js';
import type { SampleProfile } from './sample-profile.js';

/** Titles of the table's columns. */
export const kAdviceColumns: ReadonlyArray<string> = Object.freeze([
  'candidate',
  'span',
  'buckets',
  'measurements/bucket',
  'bytes/measurement',
  'closures',
  'open-bucket memory',
  'buckets/query',
  'unpacked/returned',
]);

/**
 * One row of the table.
 *
 * @param r - a candidate's result.
 * @param profile - the sample's profile.
 * @param queries - the number of queries run.
 * @returns the cells.
 */
export function adviceRow(r: CandidateResult, profile: SampleProfile, queries: number): string[] {
  return [
    candidateLabel(r.candidate),
    formatDuration(r.candidate.spanSeconds),
    formatNumber(r.buckets),
    formatNumber(r.buckets === 0 ? 0 : r.measurements / r.buckets, 1),
    formatNumber(bytesPerMeasurement(r), 1),
    formatClosures(r.counters),
    `${formatBytes(r.peakMemoryBytes)} (${formatBytes(r.peakMemoryBytes / Math.max(profile.series, 1))}/series)`,
    formatNumber(r.bucketsExamined / queries, 1),
    formatNumber(unpackedPerReturned(r), 1),
  ];
}

/**
 * The advisor's report.
 *
 * @param profile - the sample's profile.
 * @param results - the candidates, in table order.
 * @param recommendation - the choice.
 * @param queryWidthSeconds - the width of the queries.
 * @returns the text, lines joined by `\n`.
 */
export function formatAdvice(
  profile: SampleProfile,
  results: ReadonlyArray<CandidateResult>,
  recommendation: Recommendation,
  queryWidthSeconds: number,
): string {
  const queries = queryStarts(profile, queryWidthSeconds * 1000).length;
  const cadence =
    profile.cadenceMs === undefined
      ? 'unknown (no series has two measurements at different times)'
      : `one measurement every ${formatCadence(profile.cadenceMs)} per series (median)`;
  const rejected = results[0]?.rejected ?? 0;
  const sampleSeconds = (profile.lastTime - profile.firstTime) / 1000;
  // A candidate whose buckets closed on the count or size limit filled them within the sample anyway.
  const longer = results
    .filter(
      (r) =>
        r.candidate.spanSeconds > sampleSeconds &&
        (r.counters.numBucketsClosedDueToCount ?? 0) + (r.counters.numBucketsClosedDueToSize ?? 0) === 0,
    )
    .map((r) => candidateLabel(r.candidate));
  const note =
    longer.length === 0
      ? []
      : [
          `note: the sample covers less time than the span of ${longer.join(', ')}: their buckets may not have filled; a longer sample tells more.`,
        ];
  return [
    `sample:   ${formatNumber(profile.measurements)} measurements, ${formatNumber(profile.series)} series, ${new Date(profile.firstTime).toISOString()} to ${new Date(profile.lastTime).toISOString()}` +
      (profile.outOfOrder > 0 ? `, ${formatNumber(profile.outOfOrder)} out of order` : ''),
    `cadence:  ${cadence}; ${formatNumber(profile.meanMeasurementBytes, 1)} bytes per measurement as BSON (mean, without the meta)`,
    ...(rejected === 0
      ? []
      : [
          `refused:  ${formatNumber(rejected)} of the sample's measurements (the engine refuses them; not replayed)`,
        ]),
    `queries:  ${queries} time-range ${queries === 1 ? 'query' : 'queries'} of ${formatDuration(queryWidthSeconds)} over all series`,
    renderTable(
      kAdviceColumns,
      results.map((r) => adviceRow(r, profile, queries)),
    ),
    "bytes/measurement: compressed BSON bytes of the buckets per measurement; open-bucket memory: the catalog's",
    'estimate at its peak during the replay; buckets/query and unpacked/returned: per time-range query.',
    ...note,
    `recommendation: ${recommendation.reason}`,
  ].join('\n');
}
