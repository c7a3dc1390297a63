/**
 * Replaying a sample through the real engine for one candidate: a fresh embedded `BucketEngine`, the
 * sample inserted in arrival order (batches of 1000, one writer, so that the outcome does not depend on
 * scheduling), then what the buckets came out like and what time-range queries read.
 *
 * @packageDocumentation
 */
import type { CounterName } from '../../catalog/execution-stats.js';
import { kDeferredDrainThreshold } from '../../bucket-format/measurement-map.js';
import { BucketEngine } from '../../engine/bucket-engine.js';
import { BulkWriteError } from '../../errors.js';
import { bsonColumnDecoder, bucketMeasurementCount } from '../../reader/bucket-unpacker.js';
import { measureBuckets } from '../bucket-sizes.js';
import type { Candidate } from './candidates.js';
import { candidateOptions } from './candidates.js';
import type { SampleProfile } from './sample-profile.js';

/** Measurements per `insertMany` of the replay. */
const kReplayBatch = 1000;
/** Time-range queries run per candidate. */
export const kQueries = 20;

/** What a candidate did with the sample. */
export interface CandidateResult {
  /** The candidate. */
  readonly candidate: Candidate;
  /** Bucket documents stored. */
  readonly buckets: number;
  /** Measurements stored. */
  readonly measurements: number;
  /** BSON bytes with every bucket compressed. */
  readonly compressedBytes: number;
  /** The collection's execution counters (closures by reason). */
  readonly counters: Readonly<Partial<Record<CounterName, number>>>;
  /** The catalog's memory estimate (`memoryUsage`) at its peak during the replay, in bytes. */
  readonly peakMemoryBytes: number;
  /** Buckets examined by the time-range queries, summed. */
  readonly bucketsExamined: number;
  /** Measurements unpacked by the queries (those of the examined buckets), summed. */
  readonly measurementsUnpacked: number;
  /** Measurements returned by the queries, summed. */
  readonly measurementsReturned: number;
  /** Measurements of the sample the engine refused (the same for every candidate). */
  readonly rejected: number;
}

/** The sample and how to read it. */
export interface ReplayInput {
  /** Measurements in arrival order (each insert copies them; they are not changed). */
  readonly docs: ReadonlyArray<Record<string, unknown>>;
  /** The sample's profile. */
  readonly profile: SampleProfile;
  /** The time field. */
  readonly timeField: string;
  /** The metaField, if any. */
  readonly metaField: string | undefined;
  /** Width of the time-range queries, seconds. */
  readonly queryWidthSeconds: number;
}

/**
 * Start times of the queries: {@link kQueries} windows spread evenly from the first to the last time of
 * the sample (one window when the sample is shorter than a window).
 *
 * @param profile - the sample's profile.
 * @param widthMs - window width in milliseconds.
 * @returns the start times, epoch milliseconds.
 */
export function queryStarts(profile: SampleProfile, widthMs: number): number[] {
  const room = profile.lastTime - profile.firstTime - widthMs;
  if (room <= 0) return [profile.firstTime];
  return Array.from(
    { length: kQueries },
    (_, i) => profile.firstTime + Math.floor((room * i) / (kQueries - 1)),
  );
}

/**
 * Replay the sample for one candidate.
 *
 * @param input - the sample.
 * @param candidate - the bucketing to try.
 * @returns the outcome.
 * @throws what the engine throws other than a `BulkWriteError` (refused measurements are counted).
 */
export async function replayCandidate(input: ReplayInput, candidate: Candidate): Promise<CandidateResult> {
  const { timeField, metaField } = input;
  const engine = new BucketEngine({ ttlMonitor: 'disabled' });
  // The memory per series reported is what a catalog of many series holds: a sample's few series would
  // otherwise keep the longer runs of a catalog of few buckets unencoded (see DrainPolicy).
  const drain = engine.catalog.state.drain;
  drain.adaptive = false;
  drain.threshold = kDeferredDrainThreshold;
  try {
    const coll = await engine.createCollection('sample', {
      timeseries: {
        timeField,
        ...(metaField === undefined ? {} : { metaField }),
        ...candidateOptions(candidate),
      },
    });
    let peakMemoryBytes = 0;
    let rejected = 0;
    for (let i = 0; i < input.docs.length; i += kReplayBatch) {
      try {
        await coll.insertMany(input.docs.slice(i, i + kReplayBatch), { ordered: false });
      } catch (error) {
        // Measurements the engine refuses (a `$`-prefixed field...) are refused by every candidate alike.
        if (!BulkWriteError.isBulkWriteError(error)) throw error;
        rejected += error.writeErrors.length;
      }
      peakMemoryBytes = Math.max(peakMemoryBytes, engine.serverStatus().bucketCatalog.memoryUsage);
    }
    const stats = await coll.stats();
    const sizes = await measureBuckets(coll.buckets.find(), timeField);
    let bucketsExamined = 0;
    let measurementsUnpacked = 0;
    let measurementsReturned = 0;
    const widthMs = input.queryWidthSeconds * 1000;
    for (const start of queryStarts(input.profile, widthMs)) {
      const explain = await coll
        .find({ [timeField]: { $gte: new Date(start), $lt: new Date(start + widthMs) } })
        .explain();
      bucketsExamined += explain.executionStats.totalBucketsExamined;
      measurementsReturned += explain.executionStats.nReturned;
      for await (const bucket of coll.buckets.find(explain.bucketFilter)) {
        measurementsUnpacked += bucketMeasurementCount(bucket, timeField, bsonColumnDecoder);
      }
    }
    return {
      candidate,
      buckets: sizes.buckets,
      measurements: sizes.measurements,
      compressedBytes: sizes.compressedBytes,
      counters: stats.timeseries,
      peakMemoryBytes,
      bucketsExamined,
      measurementsUnpacked,
      measurementsReturned,
      rejected,
    };
  } finally {
    await engine.close();
  }
}
