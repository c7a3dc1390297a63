/**
 * The short summary printed after an ingest (`tsbuckets demo`, `tsbuckets ingest`): throughput, buckets,
 * measurements per bucket, bytes per measurement and why buckets closed, each with its unit. The full
 * counters (`--stats`) are printed by {@link formatFullStats}.
 *
 * @packageDocumentation
 */
import type { BucketCatalogServerStatus } from '../catalog/bucket-catalog.js';
import type { CounterName } from '../catalog/execution-stats.js';
import type { CollectionStats } from '../engine/timeseries-collection.js';
import type { BucketSizes } from './bucket-sizes.js';
import { renderKeyValueTable } from './table.js';

/** Why buckets closed: the counter and how the summary names it, in the order printed. */
export const kClosureReasons: ReadonlyArray<readonly [CounterName, string]> = Object.freeze([
  ['numBucketsClosedDueToCount', 'count'],
  ['numBucketsClosedDueToSize', 'size'],
  ['numBucketsClosedDueToTimeForward', 'time forward'],
  ['numBucketsClosedDueToTimeBackward', 'time backward'],
  ['numBucketsClosedDueToSchemaChange', 'schema change'],
  ['numBucketsClosedDueToMemoryThreshold', 'memory threshold'],
  ['numBucketsClosedDueToCachePressure', 'cache pressure'],
  ['numBucketsClosedDueToReopening', 'reopening'],
  ['numBucketsArchivedDueToTimeBackward', 'archived (time backward)'],
  ['numBucketsArchivedDueToMemoryThreshold', 'archived (memory threshold)'],
] as const);

/** What the summary is made of. */
export interface IngestSummaryInput {
  /** Measurements inserted. */
  readonly inserted: number;
  /** Wall-clock seconds of the ingest. */
  readonly seconds: number;
  /** The collection's statistics after the ingest. */
  readonly stats: CollectionStats;
  /** Open buckets in the catalog (`serverStatus().bucketCatalog.numOpenBuckets`). */
  readonly openBuckets: number;
  /** The stored buckets, measured. */
  readonly sizes: BucketSizes;
}

/**
 * Closures by reason, the non-zero ones, as `count 12, time forward 3`; `none` when no bucket closed.
 *
 * @param counters - execution statistics.
 * @returns the text.
 */
export function formatClosures(counters: Readonly<Partial<Record<CounterName, number>>>): string {
  const parts: string[] = [];
  for (const [name, label] of kClosureReasons) {
    const n = counters[name] ?? 0;
    if (n > 0) parts.push(`${label} ${n.toLocaleString('en-US')}`);
  }
  return parts.length === 0 ? 'none' : parts.join(', ');
}

/**
 * A number with a fixed count of decimals and thousands separators.
 *
 * @param n - the number.
 * @param decimals - digits after the point.
 * @returns the text.
 */
export function formatNumber(n: number, decimals = 0): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/**
 * A byte count with a binary unit (`512 B`, `1.5 KiB`, `12.0 MiB`).
 *
 * @param bytes - a byte count.
 * @returns the text.
 */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  if (bytes < 1024 * 1024) return `${formatNumber(bytes / 1024, 1)} KiB`;
  return `${formatNumber(bytes / (1024 * 1024), 1)} MiB`;
}

/**
 * The summary of an ingest.
 *
 * @param input - counts, time, statistics and sizes.
 * @returns the lines, joined by `\n`.
 */
export function formatIngestSummary(input: IngestSummaryInput): string {
  const { inserted, seconds, stats, openBuckets, sizes } = input;
  const rate = seconds > 0 ? inserted / seconds : 0;
  const perBucket = sizes.buckets > 0 ? sizes.measurements / sizes.buckets : 0;
  const perMeasurement = (bytes: number): string =>
    sizes.measurements > 0 ? formatNumber(bytes / sizes.measurements, 1) : '0.0';
  return [
    `ingested:    ${formatNumber(inserted)} measurements in ${formatNumber(seconds, 2)} s (${formatNumber(rate)} measurements/s)`,
    `buckets:     ${formatNumber(stats.timeseries.bucketCount)} (${formatNumber(openBuckets)} open), ${formatNumber(perBucket, 1)} measurements per bucket`,
    `size:        ${perMeasurement(sizes.compressedBytes)} bytes per measurement compressed, ${perMeasurement(sizes.uncompressedBytes)} uncompressed`,
    `closures:    ${formatClosures(stats.timeseries)}`,
  ].join('\n');
}

/**
 * Every counter: the collection's `collStats.timeseries` and the catalog's `serverStatus.bucketCatalog`,
 * as two tables with MongoDB's names.
 *
 * @param stats - the collection's statistics.
 * @param bucketCatalog - the catalog's status.
 * @returns the tables, with titles.
 */
export function formatFullStats(stats: CollectionStats, bucketCatalog: BucketCatalogServerStatus): string {
  return [
    `collStats.timeseries (${stats.ns})`,
    renderKeyValueTable(Object.entries(stats.timeseries)),
    'serverStatus.bucketCatalog',
    renderKeyValueTable(Object.entries(bucketCatalog)),
  ].join('\n');
}
