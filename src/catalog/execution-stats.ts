/**
 * Execution statistics of the bucket catalog, named exactly as MongoDB names them (docs/mongodb-behaviour.md §6.1;
 * `bucket_catalog/execution_stats.h`).
 *
 * Counters only go up; the one gauge (`numActiveBuckets`) goes up and down. Each collection has its own
 * stats and the catalog has global ones; an {@link ExecutionStatsController} updates both together.
 * Derived numbers (`avgNumMeasurementsPerCommit`) are computed when stats are read.
 *
 * @packageDocumentation
 */

/**
 * Every counter at 0, in MongoDB 8.0's output order (`appendExecutionStatsToBuilder`): the one list of the
 * counters. A literal, so that each collection's counters are an object with the counters at fixed
 * offsets; one built by adding them by name was a dictionary, and each increment a hash lookup.
 */
function zeroCounters() {
  return {
    numBucketInserts: 0,
    numBucketUpdates: 0,
    numBucketsOpenedDueToMetadata: 0,
    numBucketsClosedDueToCount: 0,
    numBucketsClosedDueToSchemaChange: 0,
    numBucketsClosedDueToSize: 0,
    numBucketsClosedDueToTimeForward: 0,
    numBucketsClosedDueToTimeBackward: 0,
    numBucketsClosedDueToMemoryThreshold: 0,
    numCommits: 0,
    numMeasurementsGroupCommitted: 0,
    numWaits: 0,
    numMeasurementsCommitted: 0,
    numBucketsClosedDueToReopening: 0,
    numBucketsArchivedDueToMemoryThreshold: 0,
    numBucketsArchivedDueToTimeBackward: 0,
    numBucketsReopened: 0,
    numBucketsKeptOpenDueToLargeMeasurements: 0,
    numBucketsClosedDueToCachePressure: 0,
    numBucketsFrozen: 0,
    numCompressedBucketsConvertedToUnsorted: 0,
    numBucketsFetched: 0,
    numBucketsQueried: 0,
    numBucketFetchesFailed: 0,
    numBucketQueriesFailed: 0,
    numBucketReopeningsFailed: 0,
    numDuplicateBucketsReopened: 0,
    numBytesUncompressed: 0,
    numBytesCompressed: 0,
    numSubObjCompressionRestart: 0,
    numCompressedBuckets: 0,
    numUncompressedBuckets: 0,
    numFailedDecompressBuckets: 0,
    numBucketDocumentsTooLargeInsert: 0,
    numBucketDocumentsTooLargeUpdate: 0,
  };
}

/** A counter name. */
export type CounterName = keyof ReturnType<typeof zeroCounters>;

/** Counter names, in MongoDB 8.0's output order. */
const kCounterNames = Object.keys(zeroCounters()) as ReadonlyArray<CounterName>;

/** The raw, mutable statistics of one collection or of the whole catalog. */
export interface ExecutionStats {
  /** Monotonic counters. */
  readonly counters: Record<CounterName, number>;
  /** Gauge: open plus archived buckets. */
  numActiveBuckets: number;
}

/**
 * A snapshot of execution statistics as MongoDB prints them: `numActiveBuckets`, the counters in 8.0's
 * order, with `avgNumMeasurementsPerCommit` after `numMeasurementsCommitted` when there was a commit.
 */
export type ExecutionStatsSnapshot = Readonly<
  { numActiveBuckets: number; avgNumMeasurementsPerCommit?: number } & Record<
    Exclude<CounterName, CompressionCounterName>,
    number
  > &
    Partial<Record<CompressionCounterName, number>>
>;

/**
 * The 5.x–7.x statistics of compression on close, which MongoDB 8.0 does not print when buckets are
 * compressed from their first commit (`timeseriesAlwaysUseCompressedBuckets`).
 */
export const kCompressionCounterNames = [
  'numBytesUncompressed',
  'numBytesCompressed',
  'numSubObjCompressionRestart',
  'numCompressedBuckets',
  'numUncompressedBuckets',
  'numFailedDecompressBuckets',
] as const;

/** A 5.x–7.x compression statistic. */
export type CompressionCounterName = (typeof kCompressionCounterNames)[number];

/** Which statistics a snapshot prints: all, or without the 5.x–7.x compression ones (8.0 format). */
export type ExecutionStatsFormat = 'compressOnClose' | 'alwaysCompressed';

/**
 * New zeroed statistics.
 *
 * @returns stats with every counter at 0.
 */
export function makeExecutionStats(): ExecutionStats {
  return { counters: zeroCounters(), numActiveBuckets: 0 };
}

/**
 * Updates a collection's statistics and the global ones together (MongoDB's
 * `ExecutionStatsController`).
 */
export class ExecutionStatsController {
  /** The collection's statistics. */
  readonly collection: ExecutionStats;
  /** The catalog-wide statistics. */
  readonly global: ExecutionStats;

  /**
   * @param collection - the collection's stats.
   * @param global - the catalog's stats.
   */
  constructor(collection: ExecutionStats, global: ExecutionStats) {
    this.collection = collection;
    this.global = global;
  }

  /**
   * Add `n` to a counter of both.
   *
   * @param name - the counter.
   * @param n - a non-negative amount (default 1).
   */
  inc(name: CounterName, n = 1): void {
    this.collection.counters[name] += n;
    this.global.counters[name] += n;
  }

  /**
   * Count one commit in both: `numCommits`, `numBucketInserts` or `numBucketUpdates`,
   * `numBucketsOpenedDueToMetadata` when it applies, `numMeasurementsCommitted` and
   * `numMeasurementsGroupCommitted`. What {@link ExecutionStatsController.inc} of each does, with each
   * counter named: every commit counts these, and an increment by a name that varies is a lookup.
   *
   * @param inserted - whether the commit inserted its bucket (else it updated it).
   * @param openedDueToMetadata - whether the bucket was opened for a new meta value.
   * @param measurements - measurements committed.
   * @param grouped - of those, the ones other writers staged.
   */
  countCommit(inserted: boolean, openedDueToMetadata: boolean, measurements: number, grouped: number): void {
    countCommitIn(this.collection.counters, inserted, openedDueToMetadata, measurements, grouped);
    countCommitIn(this.global.counters, inserted, openedDueToMetadata, measurements, grouped);
  }

  /**
   * Add `delta` (possibly negative) to the `numActiveBuckets` gauge of both.
   *
   * @param delta - change in the number of open plus archived buckets.
   */
  addActiveBuckets(delta: number): void {
    this.collection.numActiveBuckets += delta;
    this.global.numActiveBuckets += delta;
  }
}

/** {@link ExecutionStatsController.countCommit} in one set of counters. */
function countCommitIn(
  counters: Record<CounterName, number>,
  inserted: boolean,
  openedDueToMetadata: boolean,
  measurements: number,
  grouped: number,
): void {
  counters.numCommits++;
  if (inserted) counters.numBucketInserts++;
  else counters.numBucketUpdates++;
  if (openedDueToMetadata) counters.numBucketsOpenedDueToMetadata++;
  counters.numMeasurementsCommitted += measurements;
  counters.numMeasurementsGroupCommitted += grouped;
}

/**
 * A frozen snapshot of `stats` in MongoDB's output order, with derived numbers.
 *
 * @param stats - the raw statistics.
 * @param format - `'alwaysCompressed'` leaves out the 5.x–7.x compression statistics, as 8.0 does.
 * @returns the snapshot.
 */
export function snapshotExecutionStats(
  stats: ExecutionStats,
  format: ExecutionStatsFormat = 'compressOnClose',
): ExecutionStatsSnapshot {
  const out: Record<string, number> = { numActiveBuckets: stats.numActiveBuckets };
  const hidden: ReadonlyArray<string> = format === 'alwaysCompressed' ? kCompressionCounterNames : [];
  for (const name of kCounterNames) {
    if (hidden.includes(name)) continue;
    out[name] = stats.counters[name];
    if (name === 'numMeasurementsCommitted' && stats.counters.numCommits > 0) {
      out.avgNumMeasurementsPerCommit = Math.floor(
        stats.counters.numMeasurementsCommitted / stats.counters.numCommits,
      );
    }
  }
  return Object.freeze(out) as ExecutionStatsSnapshot;
}
