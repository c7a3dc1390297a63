/**
 * The bucket catalog's public protocol (`bucket_catalog/bucket_catalog.h`, docs/mongodb-behaviour.md §7):
 * `insert` stages measurements into write batches; a writer that claims a batch's commit rights calls
 * `prepareCommit`, writes to storage, then `finish` (or `abort` on failure); other writers wait with
 * `getWriteBatchResult`.
 *
 * @packageDocumentation
 */
import type { ObjectId } from 'bson';

import { makeBucketUpdate, makeNewBucketDocument } from '../bucket-format/bucket-document.js';
import type { BucketCommit, BucketDocumentV1 } from '../bucket-format/bucket-document.js';
import type { CompressedBucketCommit } from '../bucket-format/compressed-bucket.js';
import type { BucketIdGenerator } from '../bucket-format/bucket-oid.js';
import { defaultBucketIdGenerator } from '../bucket-format/bucket-oid.js';
import { takeDocuments, takeUpdates, updateMinMax } from '../bucket-format/min-max.js';
import { kDeferredDrainThreshold } from '../bucket-format/measurement-map.js';
import { cloneBsonValue } from '../util/bson-value.js';
import { invariant } from '../util/invariant.js';
import {
  addCommittedColumns,
  clearedError,
  clearNamespace,
  closeOpenBucket,
  failUnpreparedBatches,
  keyFor,
  performRolloverAction,
  skipOptions,
  stageSeries,
  stripeFor,
  stripeOfBucket,
  updateBucketMemoryUsage,
} from './bucket-catalog-internal.js';
import type {
  BucketClosedHook,
  BucketingOptions,
  CatalogParameters,
  CatalogState,
  CollectionState,
  InsertItem,
  PrefetchedReopening,
  PrefetchedReopenings,
  SeriesRun,
  SeriesStaging,
  StagePause,
  StageResult,
} from './bucket-catalog-internal.js';
import { removeOpenBatch } from './bucket.js';
import type { Bucket } from './bucket.js';
import { makeBucketMetadata } from './bucket-metadata.js';
import {
  clearBucketForDirectWrite,
  isSafeToReopen,
  makeBucketStateRegistry,
  registerDirectWriteFinish,
  registerDirectWriteStart,
  stripeHoldsBucket,
} from './bucket-state-registry.js';
import type { BucketStateRegistry } from './bucket-state-registry.js';
import { kNumberOfStripes, stripeNumber } from './bucket-identifiers.js';
import type { BucketKey } from './bucket-identifiers.js';
import { prepareCompressedWrite } from './compressed-commit.js';
import { ExecutionStatsController, makeExecutionStats, snapshotExecutionStats } from './execution-stats.js';
import type { ExecutionStatsFormat, ExecutionStatsSnapshot } from './execution-stats.js';
import {
  compressedForReopening,
  findReopeningCandidate,
  installReopenedBucket,
  rehydrateBucket,
  reopeningQueryFilter,
  uncompressedForReopening,
} from './reopening.js';
import type { ReopeningRequest, ReopeningSource } from './reopening.js';
import { makeStripe, withStripe, withStripeSync } from './stripe.js';
import type { Stripe, StripeLock } from './stripe.js';
import { claimWriteBatchCommitRights as claim, stagedBy } from './write-batch.js';
import type { CommitInfo, WriteBatch } from './write-batch.js';
import { isBsonValue } from '../util/bson-type.js';

export type {
  BucketingOptions,
  CatalogParameters,
  InsertItem,
  StageResult,
} from './bucket-catalog-internal.js';
export { insertItem } from './bucket-catalog-internal.js';
export { kLongCall } from './bucket-catalog-internal.js';
export type { ReopeningSource } from './reopening.js';
export type { CommitInfo, WriteBatch } from './write-batch.js';

/**
 * Sort `positions[start, end)` by the items' times, stably (equal times keep their input order). Most calls
 * send each series' measurements in time order already: then nothing is copied.
 */
function sortByTime(items: ReadonlyArray<InsertItem>, positions: number[], start: number, end: number): void {
  let sorted = true;
  for (let i = start + 1; i < end && sorted; i++) {
    const before = items[positions[i - 1] as number] as InsertItem;
    sorted = (items[positions[i] as number] as InsertItem).timeMs >= before.timeMs;
  }
  if (sorted) return;
  const run = positions.slice(start, end);
  // Array.prototype.sort is stable.
  run.sort((a, b) => (items[a] as InsertItem).timeMs - (items[b] as InsertItem).timeMs);
  for (let i = 0; i < run.length; i++) positions[start + i] = run[i] as number;
}

/**
 * A call's measurements grouped by series, without an object per series (a bulk loader sends one
 * measurement for each of thousands of series). Per series, in order of first appearance: its key, its
 * stripe, and its run `[start, end)` of `positions` (item indices, in input order). `order` lists the
 * series by stripe, then first appearance, so that staging takes each stripe once; the runs follow it.
 */
interface SeriesGroups {
  readonly keys: BucketKey[];
  readonly stripes: number[];
  readonly starts: number[];
  readonly ends: number[];
  readonly order: number[];
  readonly positions: number[];
}

function groupSeries(ns: string, items: ReadonlyArray<InsertItem>): SeriesGroups {
  const seriesOf = new Map<string, number>();
  const keys: BucketKey[] = [];
  const counts: number[] = [];
  const seriesIndex = new Array<number>(items.length);
  for (let i = 0; i < items.length; i++) {
    const metadata = (items[i] as InsertItem).metadata;
    let s = seriesOf.get(metadata.key);
    if (s === undefined) {
      s = keys.length;
      seriesOf.set(metadata.key, s);
      keys.push(keyFor(ns, metadata));
      counts.push(0);
    }
    seriesIndex[i] = s;
    counts[s] = (counts[s] as number) + 1;
  }
  // Counting sort of the series by stripe (stable: first appearance within a stripe).
  const stripes = keys.map(stripeNumber);
  const next = new Array<number>(kNumberOfStripes).fill(0);
  for (let s = 0; s < stripes.length; s++) {
    const stripe = stripes[s] as number;
    next[stripe] = (next[stripe] as number) + 1;
  }
  for (let t = 0, at = 0; t < kNumberOfStripes; t++) {
    const count = next[t] as number;
    next[t] = at;
    at += count;
  }
  const order = new Array<number>(keys.length);
  for (let s = 0; s < keys.length; s++) {
    const stripe = stripes[s] as number;
    order[next[stripe] as number] = s;
    next[stripe] = (next[stripe] as number) + 1;
  }
  // The runs, in that order; `ends` fills them and is each run's end afterwards.
  const starts = new Array<number>(keys.length);
  const ends = new Array<number>(keys.length);
  for (let k = 0, at = 0; k < order.length; k++) {
    const s = order[k] as number;
    starts[s] = at;
    ends[s] = at;
    at += counts[s] as number;
  }
  const positions = new Array<number>(items.length);
  for (let i = 0; i < items.length; i++) {
    const s = seriesIndex[i] as number;
    positions[ends[s] as number] = i;
    ends[s] = (ends[s] as number) + 1;
  }
  return { keys, stripes, starts, ends, order, positions };
}

/** Whether an insert may share batches with other writers (`CombineWithInsertsFromOtherClients`). */
export type CombineWithInsertsFromOtherClients = 'allow' | 'disallow';

/** What the writer holding commit rights must write, from {@link BucketCatalog.prepareCommit}. */
export type PreparedCommit =
  /** First commit of the bucket: insert the whole document (version 1, or version 2 when compressed). */
  | {
      readonly kind: 'insert';
      readonly bucketId: ObjectId;
      readonly document: BucketDocumentV1 | Readonly<Record<string, unknown>>;
    }
  /**
   * Later commit: apply it to the bucket if the bucket holds exactly the measurements the catalog
   * committed (`Storage.applyCommit`), so a bucket changed by someone else is not appended to.
   */
  | {
      readonly kind: 'update';
      readonly bucketId: ObjectId;
      readonly commit: BucketCommit | CompressedBucketCommit;
    }
  /** The batch was aborted (its bucket was cleared); nothing to write. */
  | { readonly kind: 'aborted'; readonly error: unknown };

/** The catalog section of `serverStatus` (docs/mongodb-behaviour.md §6.2). */
export type BucketCatalogServerStatus = Readonly<
  {
    numBuckets: number;
    numOpenBuckets: number;
    numIdleBuckets: number;
    numArchivedBuckets: number;
    memoryUsage: number;
  } & Omit<ExecutionStatsSnapshot, 'numActiveBuckets'>
>;

/** The bucket a direct write is about: its `_id`, and its `meta` as stored (absent when it has none). */
export interface DirectWriteTarget {
  /** The bucket's `_id`. */
  readonly _id: ObjectId;
  /** The bucket's stored meta value; an own `meta` property, absent for a bucket without meta. */
  readonly meta?: unknown;
}

/** Options of {@link BucketCatalog}. */
export interface BucketCatalogOptions {
  /** Resolved server parameters. */
  readonly parameters: CatalogParameters;
  /**
   * Source of bucket ids.
   * @defaultValue the process-wide generator
   */
  readonly idGenerator?: BucketIdGenerator;
  /** Called when a bucket with committed measurements is closed. */
  readonly onBucketClosed?: BucketClosedHook;
  /**
   * Whether late measurements may reopen buckets from storage (archive- and query-based, MongoDB 6.3+).
   * @defaultValue 'enabled'
   */
  readonly reopening?: 'enabled' | 'disabled';
  /**
   * Whether the storage takes compressed buckets' columns when it needs them (`MemoryStorage`): the
   * buckets' encoding is then deferred (see `MeasurementMap`). Only for the compressed format.
   * @defaultValue false
   */
  readonly deferredColumns?: boolean;
}

/**
 * MongoDB's BucketCatalog: open buckets in memory keyed by namespace and series, grouped into 32 stripes,
 * each guarded by a mutex; concurrent writers grouped into write batches with claim-to-commit.
 *
 * @example
 * ```ts
 * const results = await catalog.insert('db.weather', options, items, 'allow');
 * for (const r of results) if (r.kind === 'staged' && catalog.claimWriteBatchCommitRights(r.batch)) {
 *   const prepared = await catalog.prepareCommit(r.batch);
 *   // storage.insertOne(prepared.document) or storage.applyCommit(prepared.commit), then:
 *   await catalog.finish(r.batch);
 * }
 * ```
 */
export class BucketCatalog {
  readonly #state: CatalogState;
  /** Pending direct writes and the era (docs/mongodb-behaviour.md §8). */
  readonly #registry: BucketStateRegistry = makeBucketStateRegistry();

  /**
   * @param options - parameters, id generator and close hook.
   */
  constructor(options: BucketCatalogOptions) {
    const stripes = [];
    for (let i = 0; i < kNumberOfStripes; i++) stripes.push(makeStripe());
    this.#state = {
      stripes,
      parameters: options.parameters,
      idGenerator: options.idGenerator ?? defaultBucketIdGenerator,
      globalStats: makeExecutionStats(),
      collections: new Map(),
      memoryUsage: 0,
      nextOpId: 1,
      onBucketClosed: options.onBucketClosed,
      reopening: options.reopening ?? 'enabled',
      deferredColumns: options.deferredColumns === true,
      drain: { threshold: kDeferredDrainThreshold, adaptive: true },
    };
  }

  /**
   * The internal state, for tests and the engine's inspection tools.
   *
   * @returns the catalog's plain state.
   * @internal
   */
  get state(): CatalogState {
    return this.#state;
  }

  /**
   * A fresh opId: identifies one insert call (its own batches when it must not share them, and who staged
   * and who committed each measurement, for `numMeasurementsGroupCommitted`).
   *
   * @returns a positive integer.
   */
  newOpId(): number {
    return this.#state.nextOpId++;
  }

  #collection(ns: string, options?: BucketingOptions): CollectionState {
    let coll = this.#state.collections.get(ns);
    if (coll === undefined) {
      invariant(options !== undefined, 2003, `collection ${ns} has not inserted yet`);
      coll = {
        ns,
        options,
        stats: new ExecutionStatsController(makeExecutionStats(), this.#state.globalStats),
      };
      this.#state.collections.set(ns, coll);
    } else if (options !== undefined) {
      // collMod may have changed the span or rounding: new buckets use the options of the latest insert.
      coll.options = options;
    }
    return coll;
  }

  /**
   * Stage measurements: grouped by series, each group stably sorted by time (MongoDB 8.1+), each group
   * staged under its stripe's lock.
   *
   * @param ns - namespace of the collection.
   * @param options - its bucketing options.
   * @param items - measurements with their time and series; the catalog keeps the measurements' values
   *   as they are, so pass documents nobody changes afterwards (`copyMeasurement` makes such a copy).
   * @param combine - `'allow'` to share batches with other unordered writers (group commit).
   * @param opId - the caller's opId (see {@link BucketCatalog.newOpId}); batches are keyed by it when
   *   `combine` is `'disallow'`, by 0 otherwise.
   * @returns one result per item, in item order: the batch it was staged into, or an error.
   */
  async insert(
    ns: string,
    options: BucketingOptions,
    items: ReadonlyArray<InsertItem>,
    combine: CombineWithInsertsFromOtherClients,
    opId: number,
    source?: ReopeningSource,
  ): Promise<StageResult[]> {
    const effectiveOpId = combine === 'allow' ? 0 : opId;
    const groups = groupSeries(ns, items);
    const { keys, stripes, starts, ends, order, positions } = groups;
    const reading = this.#prefetchReopening(options, items, groups, source);
    const prefetched = reading === undefined ? undefined : await reading;
    const out: StageResult[] = new Array<StageResult>(items.length);
    const series: SeriesStaging = {
      coll: this.#collection(ns, options),
      options,
      items,
      positions,
      out,
      op: { batchKey: effectiveOpId, writer: opId },
      source,
      prefetched,
    };
    // The run being staged (one object, rewritten series after series; copied only for a pause).
    const run = { key: keys[0] as BucketKey, start: 0, end: 0 };
    for (let k = 0; k < order.length;) {
      const stripeNo = stripes[order[k] as number] as number;
      let to = k + 1;
      while (to < order.length && stripes[order[to] as number] === stripeNo) to++;
      const from = k;
      k = to;
      const stripe = this.#state.stripes[stripeNo] as Stripe;
      // Stage synchronously; a series that needs a bucket from storage pauses and is finished below.
      const paused = await withStripeSync(stripe, (lock) => {
        series.coll = this.#collection(ns, options);
        let waiting: Array<{ run: SeriesRun; pause: StagePause }> | undefined;
        for (let j = from; j < to; j++) {
          const s = order[j] as number;
          run.key = keys[s] as BucketKey;
          run.start = starts[s] as number;
          run.end = ends[s] as number;
          sortByTime(items, positions, run.start, run.end);
          const pause = stageSeries(this.#state, lock, series, run);
          if (pause !== undefined) (waiting ??= []).push({ run: { ...run }, pause });
        }
        return waiting;
      });
      if (paused === undefined) continue;
      // The stripe stays locked while storage is read, so no other writer opens a second copy of a
      // bucket or another bucket for one of the series meanwhile. Once for all the stripe's paused series:
      // a call that brings thousands of new series pauses each of them (a reopening query), and taking
      // the mutex per series made a promise chain per series.
      await withStripe(stripe, async (lock) => {
        for (const { run: pausedRun, pause } of paused) {
          let step: StagePause | undefined = pause;
          while (step !== undefined && source !== undefined) {
            const reopened = await this.#reopen(lock, series.coll, pausedRun.key, source, step.request);
            // A drop while storage was read: the bucket read is of the dropped collection.
            series.coll = this.#collection(ns, options);
            if (reopened !== undefined) installReopenedBucket(this.#state, lock, series.coll, reopened);
            step = stageSeries(this.#state, lock, series, pausedRun, {
              index: step.index,
              reopening: 'done',
              why: step.why,
            });
          }
        }
      });
    }
    return out;
  }

  /**
   * The reopening queries of the call's series that have no open bucket, answered with one read when the
   * source can (`ReopeningSource.reopeningCandidates`: over MongoDB each query was a round trip, one after
   * the other, and a bulk load's first call brings thousands of new series), by series signature. Each
   * query is made for the series' earliest measurement in the call, the one staged first. `undefined`
   * when not asked: reopening is off or cannot query, the source cannot answer, fewer than two series
   * would be spared a query (one query costs what the read costs), or the read failed (the queries are
   * then made one by one, as without it). Which series have an open bucket is read without their
   * stripes' locks: it only decides which queries are read ahead.
   */
  #prefetchReopening(
    options: BucketingOptions,
    items: ReadonlyArray<InsertItem>,
    groups: SeriesGroups,
    source: ReopeningSource | undefined,
  ): Promise<PrefetchedReopenings | undefined> | undefined {
    if (
      source?.reopeningCandidates === undefined ||
      this.#state.reopening !== 'enabled' ||
      options.reopeningIndex === 'absent'
    ) {
      return undefined;
    }
    const { keys, stripes, starts, ends, positions } = groups;
    const asked: number[] = [];
    for (let s = 0; s < keys.length; s++) {
      const stripe = this.#state.stripes[stripes[s] as number] as Stripe;
      if (stripe.openBucketsByKey.get((keys[s] as BucketKey).signature) === undefined) asked.push(s);
    }
    if (asked.length < 2) return undefined;
    const times = asked.map((s) => {
      let timeMs = Number.POSITIVE_INFINITY;
      for (let i = starts[s] as number; i < (ends[s] as number); i++) {
        timeMs = Math.min(timeMs, (items[positions[i] as number] as InsertItem).timeMs);
      }
      return timeMs;
    });
    const queries = asked.map((s, i) => {
      const meta = (items[positions[starts[s] as number] as number] as InsertItem).metadata.normalizedMeta;
      const hasMeta = meta !== undefined;
      const filter = reopeningQueryFilter(options, this.#state.parameters, hasMeta, meta, times[i] as number);
      return { filter, hasMeta, normalizedMeta: meta };
    });
    const registry = this.#registry;
    const era = registry.currentEra;
    return source.reopeningCandidates(queries).then(
      (found) => {
        const answers = new Map<string, PrefetchedReopening>();
        for (let i = 0; i < asked.length; i++) {
          const docs = found[i];
          if (docs === undefined) continue;
          answers.set((keys[asked[i] as number] as BucketKey).signature, {
            timeMs: times[i] as number,
            filter: (queries[i] as { filter: Readonly<Record<string, unknown>> }).filter,
            docs,
          });
        }
        return { answers, registry, era };
      },
      // Only a way to spare queries: after a failed read they are made one by one.
      () => undefined,
    );
  }

  /**
   * What a prefetched answer stands for now: while the era it was read in lasts, its documents but those a
   * direct write is pending on (as a query's documents are checked, `isSafeToReopen`); once a direct write
   * has ended since, the query, made again.
   */
  #stillReopenable(request: Extract<ReopeningRequest, { kind: 'prefetched' }>): ReopeningRequest {
    if (this.#registry.currentEra !== request.era) return { kind: 'query', filter: request.filter };
    const docs = request.docs.filter(
      (doc) => isBsonValue(doc._id, 'ObjectId') && isSafeToReopen(this.#registry, doc._id, request.era),
    );
    return docs.length === request.docs.length ? request : { ...request, docs };
  }

  /**
   * Read and rehydrate the bucket a pause asked for; `undefined` when there is none to reopen, or when
   * reading or rewriting it failed: reopening only fills buckets better, so a storage error here sends the
   * measurements to a new bucket (counted in `numBucketReopeningsFailed`) instead of failing a call whose
   * other series are already staged.
   */
  async #reopen(
    _lock: StripeLock,
    coll: CollectionState,
    key: BucketKey,
    source: ReopeningSource,
    request: ReopeningRequest,
  ): Promise<Bucket | undefined> {
    let candidate: Awaited<ReturnType<typeof findReopeningCandidate>>;
    let stored: Awaited<ReturnType<typeof uncompressedForReopening>>;
    const compressed = this.#state.parameters.timeseriesAlwaysUseCompressedBuckets === true;
    try {
      candidate = await findReopeningCandidate(
        coll,
        source,
        request.kind === 'prefetched' ? this.#stillReopenable(request) : request,
        this.#state.parameters.timeseriesBucketMaxSize,
      );
      if (candidate.kind === 'notFound') return undefined;
      if (compressed) {
        const result = await compressedForReopening(
          source,
          candidate.doc,
          coll.options.timeField,
          this.#state.parameters.timeseriesValidateCompressedBuckets ?? true,
        );
        // A bucket that cannot be compressed is frozen: it is never reopened, and the measurement goes to
        // a new bucket.
        if (result === 'frozen') coll.stats.inc('numBucketsFrozen');
        stored = result === 'frozen' ? undefined : result;
      } else stored = await uncompressedForReopening(source, candidate.doc);
    } catch {
      coll.stats.inc('numBucketReopeningsFailed');
      return undefined;
    }
    if (stored === undefined) {
      coll.stats.inc('numBucketReopeningsFailed');
      return undefined;
    }
    // A candidate used as stored is the document rehydrated (the query measured it); a rewritten one was
    // measured while it was built.
    const size = stored.doc === candidate.doc ? candidate.size : stored.size;
    const result = rehydrateBucket(
      coll,
      key,
      stored.doc,
      size,
      compressed ? 'compressed' : 'uncompressed',
      this.#state.deferredColumns ? 'deferred' : 'eager',
      this.#state.drain,
    );
    if (result.kind === 'ok') return result.bucket;
    coll.stats.inc('numBucketReopeningsFailed');
    return undefined;
  }

  /**
   * Claim the right to commit `batch`; exactly one caller gets `true`. The batch keeps accepting
   * measurements from other writers until it is prepared: that is what makes group commit work while the
   * claimer waits for the bucket's previous batch.
   *
   * @param batch - a staged batch.
   * @param opId - the claiming caller's opId, if known (for `numMeasurementsGroupCommitted`).
   * @returns whether this caller must commit it.
   */
  claimWriteBatchCommitRights(batch: WriteBatch, opId?: number): boolean {
    return claim(batch, opId);
  }

  /**
   * Prepare a claimed batch for its storage write: wait until no other batch of the bucket is prepared,
   * fold the measurements into the bucket's min/max, and build the whole document (first commit) or the
   * update (later commits).
   *
   * @param batch - a batch whose commit rights this caller holds.
   * @returns what to write, or `aborted` when the bucket was cleared meanwhile.
   */
  async prepareCommit(batch: WriteBatch): Promise<PreparedCommit> {
    invariant(batch.commitRights, 2001, 'prepareCommit without commit rights');
    const bucket = batch.bucket;
    // One prepared batch per bucket: while another is in flight, wait for it (its outcome does not matter
    // here) and try again. The check and the taking of the slot happen under the stripe lock.
    for (;;) {
      const step = await withStripeSync(stripeOfBucket(this.#state, bucket), (lock) =>
        this.#tryPrepare(lock, batch),
      );
      if (step.kind !== 'wait') return step;
      await step.inFlight.result.promise.then(
        () => undefined,
        () => undefined,
      );
    }
  }

  /**
   * {@link BucketCatalog.prepareCommit} without a promise when it can finish at once: the usual case of a
   * commit path that prepares a call's batches one after another (a promise round trip per batch would be
   * paid per measurement when every batch holds one).
   *
   * @param batch - a batch whose commit rights this caller holds.
   * @returns what {@link BucketCatalog.prepareCommit} returns, or `undefined` when the stripe is held or
   *   another batch of the bucket is prepared (then call {@link BucketCatalog.prepareCommit}).
   */
  prepareCommitNow(batch: WriteBatch): PreparedCommit | undefined {
    invariant(batch.commitRights, 2001, 'prepareCommit without commit rights');
    const stripe = stripeOfBucket(this.#state, batch.bucket);
    if (stripe.mutex.isLocked()) return undefined;
    const step = this.#tryPrepare({ stripe } as StripeLock, batch);
    return step.kind === 'wait' ? undefined : step;
  }

  /** Take the bucket's prepared slot for `batch` and build its write, or report the batch in flight. */
  #tryPrepare(
    _lock: StripeLock,
    batch: WriteBatch,
  ): PreparedCommit | { readonly kind: 'wait'; readonly inFlight: WriteBatch } {
    const bucket = batch.bucket;
    if (batch.state === 'finished') return { kind: 'aborted', error: batch.result.error };
    const coll = bucket.collection;
    if (bucket.state === 'cleared') {
      const error = clearedError(bucket);
      failUnpreparedBatches(bucket, error);
      return { kind: 'aborted', error };
    }
    if (bucket.preparedBatch !== undefined) return { kind: 'wait', inFlight: bucket.preparedBatch };
    bucket.preparedBatch = batch;
    removeOpenBatch(bucket, batch);
    batch.state = 'prepared';
    batch.numPreviouslyCommittedMeasurements = bucket.numCommittedMeasurements;
    const skip = skipOptions(coll.options.metaField);
    // A compressed bucket folds each measurement as its map keeps it.
    if (bucket.measurementMap !== undefined)
      return prepareCompressedWrite(bucket, batch, coll.options, coll.stats, skip);
    const measurements = batch.measurements;
    for (const m of measurements) updateMinMax(bucket.minMax, m, skip);
    if (batch.numPreviouslyCommittedMeasurements === 0) {
      // The first commit writes whole documents: built once, not also as per-field updates.
      const { min, max } = takeDocuments(bucket.minMax);
      const document = makeNewBucketDocument({
        id: bucket.id.oid,
        hasMeta: bucket.hasMeta,
        // Each bucket document gets its own copy: the normalised value is shared by every bucket of the
        // series (BucketMetadataCache), and a stored document may be changed in place. A copy, not a
        // second normalisation: the value is normalised already (its fields sorted).
        normalizedMeta: cloneBsonValue(bucket.normalizedMeta),
        min,
        max,
        measurements,
        metaField: skip.skipField,
      });
      batch.createdColumns = Object.keys(document.data);
      return { kind: 'insert', bucketId: bucket.id.oid, document };
    }
    const changes = takeUpdates(bucket.minMax);
    const n = batch.numPreviouslyCommittedMeasurements;
    const update = makeBucketUpdate({
      measurements,
      numPreviouslyCommittedMeasurements: n,
      existingColumns: bucket.fieldNames,
      minUpdates: changes.min,
      maxUpdates: changes.max,
      metaField: skip.skipField,
    });
    batch.createdColumns = update.newColumns;
    const commit = {
      bucketId: bucket.id.oid,
      series: bucket,
      timeField: coll.options.timeField,
      numPreviouslyCommittedMeasurements: n,
      update,
    };
    return { kind: 'update', bucketId: bucket.id.oid, commit };
  }

  /**
   * Publish a prepared batch's success: update statistics, release the bucket for the next batch, and
   * carry out a pending rollover once the bucket has no batch left.
   *
   * @param batch - the prepared batch whose write succeeded.
   */
  async finish(batch: WriteBatch): Promise<void> {
    await withStripeSync(stripeOfBucket(this.#state, batch.bucket), (lock) => {
      this.#finish(lock, batch);
    });
  }

  /**
   * {@link BucketCatalog.finish} without a promise when the stripe is free.
   *
   * @param batch - the prepared batch whose write succeeded.
   * @returns whether it was finished (`false`: the stripe is held, call {@link BucketCatalog.finish}).
   */
  finishNow(batch: WriteBatch): boolean {
    const stripe = stripeOfBucket(this.#state, batch.bucket);
    if (stripe.mutex.isLocked()) return false;
    this.#finish({ stripe } as StripeLock, batch);
    return true;
  }

  /** The work of {@link BucketCatalog.finish}, under the batch's stripe. */
  #finish(lock: StripeLock, batch: WriteBatch): void {
    const bucket = batch.bucket;
    invariant(
      batch.state === 'prepared' && bucket.preparedBatch === batch,
      2004,
      'finish of unprepared batch',
    );
    const coll = bucket.collection;
    const n = batch.items.length;
    const inserted = batch.numPreviouslyCommittedMeasurements === 0;
    batch.state = 'finished';
    bucket.preparedBatch = undefined;
    bucket.numCommittedMeasurements += n;
    // A compressed bucket's size is its measured column bytes: the staged estimate gives way to them.
    if (bucket.measurementMap !== undefined)
      bucket.size += batch.compressedSizeDelta - batch.uncommittedEstimate;
    const created = batch.createdColumns;
    addCommittedColumns(coll, bucket, created);
    // A bucket a clear removed while this batch was in flight no longer counts in the catalog's memory.
    if (lock.stripe.openBucketsById.get(bucket.id.hex) === bucket)
      updateBucketMemoryUsage(this.#state, bucket);
    coll.stats.countCommit(inserted, batch.openedDueToMetadata, n, n - stagedBy(batch, batch.claimedBy));
    batch.result.resolve(
      inserted
        ? { kind: 'insert', bucketId: bucket.id.hex }
        : (bucket.updateCommitInfo ??= Object.freeze({ kind: 'update', bucketId: bucket.id.hex })),
    );
    if (bucket.state === 'cleared') {
      failUnpreparedBatches(bucket);
      closeOpenBucket(this.#state, lock, coll, bucket, 'forgotten');
    } else if (bucket.openBatches.length === 0) {
      performRolloverAction(this.#state, lock, coll, bucket);
    }
  }

  /**
   * Fail a batch whose write did not succeed (or that its writer gives up): the batch fails with `error`,
   * every unprepared batch of its bucket with `TimeseriesBucketCleared` (their writers stage them again),
   * and the bucket is removed from the catalog — or, if another writer's batch is prepared, marked cleared
   * so nothing more is written to it from memory.
   *
   * A batch already finished (committed, or aborted before) is left as it is, as the server's `abort`
   * returns for one: a writer's cleanup that aborts after a finish fails no other writer's batch.
   *
   * @param batch - the failed batch.
   * @param error - the reason given to the batch's waiters.
   */
  async abort(batch: WriteBatch, error: unknown): Promise<void> {
    if (batch.state === 'finished') return;
    const bucket = batch.bucket;
    await withStripeSync(stripeOfBucket(this.#state, bucket), (lock) => {
      // Finished while this call waited for the stripe (a finish queued before it): left as it is.
      if (batch.state === 'finished') return;
      const coll = bucket.collection;
      const ownPrepared = bucket.preparedBatch === batch;
      batch.state = 'finished';
      batch.result.reject(error);
      removeOpenBatch(bucket, batch);
      failUnpreparedBatches(bucket);
      bucket.state = 'cleared';
      if (ownPrepared) bucket.preparedBatch = undefined;
      if (bucket.preparedBatch === undefined) closeOpenBucket(this.#state, lock, coll, bucket, 'forgotten');
    });
  }

  /**
   * Wait for the result of a batch committed by another writer; counts `numWaits` when it is not ready.
   *
   * @param batch - a batch this caller staged into but did not claim.
   * @returns the commit result.
   * @throws the batch's failure.
   */
  getWriteBatchResult(batch: WriteBatch): Promise<CommitInfo> {
    if (batch.result.state === 'pending') batch.stats.inc('numWaits');
    return batch.result.promise;
  }

  /**
   * Announce a write to a bucket document that does not come from the catalog (update, delete, TTL, raw
   * bucket write; docs/mongodb-behaviour.md §8, MongoDB's `directWriteStart`). The catalog forgets the bucket: batches not
   * yet prepared fail with `TimeseriesBucketCleared` (their writers re-stage them elsewhere), a prepared
   * batch is waited for (its write lands before the caller reads the document), an archived record is
   * dropped, and the bucket is not reopened until {@link BucketCatalog.directWriteFinish}.
   *
   * Call it before reading the document to rewrite, and call `directWriteFinish` afterwards whatever
   * happened.
   *
   * @param ns - namespace of the time-series collection.
   * @param bucket - the bucket's `_id` and stored `meta` (which locates its stripe).
   * @example
   * ```ts
   * await catalog.directWriteStart(ns, bucket);
   * try { await storage.deleteMany(bucketsNs, { _id: bucket._id }); }
   * finally { catalog.directWriteFinish(bucket._id); }
   * ```
   */
  async directWriteStart(ns: string, bucket: DirectWriteTarget): Promise<void> {
    const id = bucket._id;
    registerDirectWriteStart(this.#registry, id);
    try {
      const meta = Object.prototype.hasOwnProperty.call(bucket, 'meta') ? bucket.meta : undefined;
      const home = stripeFor(this.#state, keyFor(ns, makeBucketMetadata(meta)));
      // The stripe of the stored meta, plus any other stripe holding the id (a meta changed meanwhile).
      const stripes = [home, ...this.#state.stripes.filter((s) => s !== home && stripeHoldsBucket(s, id))];
      for (const stripe of stripes) {
        for (;;) {
          const step = await withStripeSync(stripe, (lock) =>
            clearBucketForDirectWrite(this.#state, lock, id),
          );
          if (step.kind === 'cleared') break;
          await step.prepared.result.promise.then(
            () => undefined,
            () => undefined,
          );
        }
      }
    } catch (error) {
      registerDirectWriteFinish(this.#registry, id);
      throw error;
    }
  }

  /**
   * End a direct write announced with {@link BucketCatalog.directWriteStart} (MongoDB's
   * `directWriteFinish`), whether it wrote or not.
   *
   * @param bucketId - the bucket's `_id`.
   */
  directWriteFinish(bucketId: ObjectId): void {
    registerDirectWriteFinish(this.#registry, bucketId);
  }

  /**
   * The current era: capture it before reading a bucket document to reopen, and check the document
   * with {@link BucketCatalog.isSafeToReopen} after the read.
   *
   * @returns the era counter.
   */
  currentEra(): number {
    return this.#registry.currentEra;
  }

  /**
   * Whether a bucket document read since `eraBeforeRead` may be reopened: no direct write is pending on
   * it and none started or finished meanwhile (MongoDB: "Bucket is from an earlier era, may be outdated").
   *
   * @param bucketId - the bucket read.
   * @param eraBeforeRead - {@link BucketCatalog.currentEra} before the read.
   * @returns `true` when the document is current.
   */
  isSafeToReopen(bucketId: ObjectId, eraBeforeRead: number): boolean {
    return isSafeToReopen(this.#registry, bucketId, eraBeforeRead);
  }

  /**
   * Forget every open bucket and archived record of a collection (drop, or any change that makes the
   * in-memory picture stale). Batches not yet prepared fail with `TimeseriesBucketCleared`.
   *
   * @param ns - namespace.
   */
  async clear(ns: string): Promise<void> {
    const coll = this.#state.collections.get(ns);
    if (coll === undefined) return;
    for (const stripe of this.#state.stripes) {
      await withStripeSync(stripe, (lock) => {
        clearNamespace(this.#state, lock, coll);
      });
    }
  }

  /**
   * Forget a collection entirely (drop): clear it and remove its statistics.
   *
   * @param ns - namespace.
   */
  async drop(ns: string): Promise<void> {
    await this.clear(ns);
    // Global counters keep what happened; the gauge already followed the cleared buckets.
    this.#state.collections.delete(ns);
  }

  /**
   * Re-seed the bucket id counter at random, as the server does after a duplicate `_id` (another process
   * with a counter in the same range).
   */
  reseedBucketIds(): void {
    this.#state.idGenerator.reseed();
  }

  /**
   * Record the outcome of compressing a closed bucket (MongoDB 5.2–7.x compression statistics).
   *
   * @param ns - namespace of the collection.
   * @param outcome - `'compressed'`, `'notSmaller'` (left uncompressed) or `'failed'` (left uncompressed).
   * @param bytesBefore - size of the version-1 document.
   * @param bytesAfter - size of the version-2 document.
   */
  recordCompression(
    ns: string,
    outcome: 'compressed' | 'notSmaller' | 'failed',
    bytesBefore: number,
    bytesAfter: number,
  ): void {
    const coll = this.#state.collections.get(ns);
    if (coll === undefined) return;
    switch (outcome) {
      case 'compressed':
        coll.stats.inc('numCompressedBuckets');
        coll.stats.inc('numBytesUncompressed', bytesBefore);
        coll.stats.inc('numBytesCompressed', bytesAfter);
        return;
      case 'notSmaller':
        coll.stats.inc('numUncompressedBuckets');
        return;
      case 'failed':
        coll.stats.inc('numUncompressedBuckets');
        coll.stats.inc('numFailedDecompressBuckets');
        return;
      default: {
        const never: never = outcome;
        throw new TypeError(`unknown compression outcome ${String(never)}`);
      }
    }
  }

  /**
   * Which bucket format the catalog writes: `'alwaysCompressed'` (MongoDB 8.0+,
   * `timeseriesAlwaysUseCompressedBuckets`) or `'compressOnClose'` (5.x–7.x).
   *
   * @returns the format.
   */
  get bucketFormat(): ExecutionStatsFormat {
    return this.#state.parameters.timeseriesAlwaysUseCompressedBuckets === true
      ? 'alwaysCompressed'
      : 'compressOnClose';
  }

  /** Which statistics snapshots print (8.0 hides the compression-on-close ones in its format). */
  get #statsFormat(): ExecutionStatsFormat {
    return this.bucketFormat;
  }

  /**
   * The execution statistics of a collection that has not inserted yet: all zero.
   *
   * @returns a frozen snapshot.
   */
  emptyExecutionStats(): ExecutionStatsSnapshot {
    return snapshotExecutionStats(makeExecutionStats(), this.#statsFormat);
  }

  /**
   * A collection's execution statistics, or `undefined` before its first insert.
   *
   * @param ns - namespace.
   * @returns a frozen snapshot.
   */
  executionStats(ns: string): ExecutionStatsSnapshot | undefined {
    const coll = this.#state.collections.get(ns);
    return coll === undefined ? undefined : snapshotExecutionStats(coll.stats.collection, this.#statsFormat);
  }

  /**
   * The `bucketCatalog` section of serverStatus: every number is 0 before the first insert (MongoDB
   * omits the section until then; here it is always present, so callers need no special case).
   *
   * @returns a frozen snapshot.
   */
  serverStatus(): BucketCatalogServerStatus {
    let numOpenBuckets = 0;
    let numIdleBuckets = 0;
    for (const stripe of this.#state.stripes) {
      numOpenBuckets += stripe.openBucketsByKey.size;
      numIdleBuckets += stripe.idleBuckets.size;
    }
    const numBuckets = this.#state.globalStats.numActiveBuckets;
    const { numActiveBuckets: _ignored, ...stats } = snapshotExecutionStats(
      this.#state.globalStats,
      this.#statsFormat,
    );
    return Object.freeze({
      numBuckets,
      numOpenBuckets,
      numIdleBuckets,
      numArchivedBuckets: Math.max(0, numBuckets - numOpenBuckets),
      memoryUsage: this.#state.memoryUsage,
      ...stats,
    });
  }
}
