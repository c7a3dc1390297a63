/**
 * The unpacking reader (the server's `$_internalUnpackBucket` stage, docs/architecture.md): `find`, `countDocuments` and `aggregate` over the
 * measurements of a time-series collection.
 *
 * A query is planned once ({@link ReadPlan}: bucket predicates, unpack selection, order, skip/limit) and
 * executed lazily when its cursor is iterated: buckets stream from the storage one at a time; of each, the
 * columns the event filter reads are decoded first and tested row by row (row-filter.ts), then only the
 * matching rows are built, as one batch. The cursor hands a batch's documents out one by one. A scan
 * therefore holds one bucket's batch and the documents waiting in the time-ordered merge, never the whole
 * result.
 *
 * Orders:
 *
 * | sort                      | execution                                                                 |
 * |---------------------------|---------------------------------------------------------------------------|
 * | none                      | buckets in storage order, measurements in bucket order                    |
 * | `{ <timeField>: ±1 }`     | buckets by `control.min` (asc) / `control.max` (desc), k-way merge; stops |
 * |                           | at the limit without reading further buckets                              |
 * | anything else             | blocking sort of the matching measurements (as the server's SORT stage)   |
 *
 * @packageDocumentation
 */
import type { Aggregator } from 'mingo/aggregator';

import { areTimeseriesBucketsFixed } from '../options.js';
import type { ResolvedCollectionOptions } from '../options.js';
import type { BucketFilter, Storage, StoredBucket } from '../storage/storage.js';
import { compareBySort, compileSort } from '../util/bson-query.js';
import type { CompiledSort, QueryFilter, SortSpec } from '../util/bson-query.js';
import { bsonNumberValue, isPlainObject } from '../util/bson-value.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import { jsonSchemaValidator } from '../util/json-schema.js';
import { pipelineAggregator } from '../util/mingo-pipeline.js';
import { mingoValue } from '../util/mingo-values.js';
import { findSortDocument, mingoCall } from '../util/query-validation.js';
import type { FindSort } from '../util/query-validation.js';
import { createBucketPredicates, mentionsField } from './bucket-predicates.js';
import type { IdBounds } from './bucket-predicates.js';
import { bsonColumnDecoder, bucketMeasurementCount, openBucket } from './bucket-unpacker.js';
import type { ColumnDecoder, FieldSelection, MeasurementDocument } from './bucket-unpacker.js';
import { Cursor } from './cursor.js';
import type { BatchGuard } from './cursor.js';
import { filterDependencies, pipelineDependencies, unionDependencies } from './field-dependencies.js';
import type { FieldDependencies } from './field-dependencies.js';
import { applyPostProjection, numericFlags, planProjection } from './find-projection.js';
import type { PostProjection, ProjectionSpec } from './find-projection.js';
import { heapPeekKey, heapPop, heapPush, makeMeasurementHeap } from './measurement-heap.js';
import { countMatching, planRowFilter, unpackMatching } from './row-filter.js';

export type { MeasurementDocument } from './bucket-unpacker.js';

/** Everything the reader needs from a collection. Build one per call from the collection's current state. */
export interface ReaderContext {
  /** Where the buckets are. */
  readonly storage: Storage;
  /** Namespace of the buckets collection. */
  readonly bucketsNs: string;
  /** The collection's resolved options (time field, metaField, span). */
  readonly options: ResolvedCollectionOptions;
  /**
   * Decoder of compressed (v2/v3) columns.
   *
   * @defaultValue BSONColumn.decode
   */
  readonly columnDecoder?: ColumnDecoder;
  /**
   * Whether time predicates may get `_id` bounds. `'detect'` asks the storage, once per query with a
   * time predicate, whether a bucket lies outside the 32-bit `_id` time range (before 1970 or after
   * 2106), in which case `_id` bounds would be wrong and are omitted.
   *
   * @defaultValue `'detect'`
   */
  readonly idBounds?: IdBounds | 'detect';
  /**
   * Runs each batch a cursor pulls, and each `explain()`: the collection refuses them once it was
   * dropped or its engine closed (see {@link BatchGuard}).
   *
   * @defaultValue none (every pull runs)
   */
  readonly guard?: BatchGuard;
}

/** Options of {@link find}. */
export interface FindOptions {
  /**
   * Projection over measurement fields (inclusion or exclusion; dotted paths and operators allowed).
   *
   * @defaultValue every field
   */
  readonly projection?: ProjectionSpec;
  /**
   * Sort specification. A sort on the time field alone reads buckets in time order and stops early.
   *
   * @defaultValue storage order
   */
  readonly sort?: FindSort;
  /**
   * Maximum number of measurements; 0 means no limit (a negative value is refused, `Location51024`).
   *
   * @defaultValue no limit
   */
  readonly limit?: number;
  /**
   * Number of matching measurements to skip.
   *
   * @defaultValue 0
   */
  readonly skip?: number;
}

/** `explain()` output. */
export interface ExplainResult {
  /** The filter sent to the storage over bucket documents. */
  readonly bucketFilter: BucketFilter;
  /** The filter applied to each measurement (`undefined` when the bucket filter is exact). */
  readonly eventFilter: QueryFilter | undefined;
  /** Counters of one execution. */
  readonly executionStats: {
    /** Bucket documents in the collection. */
    readonly totalBucketsInCollection: number;
    /** Bucket documents read from the storage. */
    readonly totalBucketsExamined: number;
    /** Documents returned. */
    readonly nReturned: number;
  };
}

/** How measurements are ordered. */
type ReadOrder =
  | { readonly kind: 'natural' }
  | { readonly kind: 'time'; readonly direction: 1 | -1 }
  | { readonly kind: 'blocking'; readonly sort: CompiledSort };

/** A planned read (plain data; the bucket filter is completed at execution, after the `_id` probe). */
interface ReadPlan {
  readonly filter: QueryFilter;
  readonly timeField: string;
  readonly metaField: string | undefined;
  readonly bucketMaxSpanSeconds: number;
  /** Whether every bucket starts at a multiple of the span (tighter lower time bounds). */
  readonly fixedBuckets: boolean;
  readonly unpack: FieldSelection;
  readonly post: PostProjection;
  readonly order: ReadOrder;
  readonly skip: number;
  /** 0 = no limit. */
  readonly limit: number;
}

/** Counters of one execution (mutated while it runs). @internal */
export interface ExecutionState {
  /** The bucket filter sent to the storage (set when execution starts). */
  bucketFilter: BucketFilter;
  /** The per-measurement filter (set when execution starts). */
  eventFilter: QueryFilter | undefined;
  /** Bucket documents read from the storage. */
  bucketsExamined: number;
  /** Documents returned. */
  nReturned: number;
  /**
   * Whether the execution has read its last bucket: what it yields from then on comes from memory, so a
   * dropped collection or a closed engine no longer fails the pulls (the server fails a `getMore` only
   * when it still has to read the collection; an exhausted cursor has none).
   */
  readsDone: boolean;
}

function newExecutionState(): ExecutionState {
  return { bucketFilter: {}, eventFilter: undefined, bucketsExamined: 0, nReturned: 0, readsDone: false };
}

/** Largest epoch ms + 1 whose seconds fit in an ObjectId timestamp. */
const OID_RANGE_END_MS = 2 ** 32 * 1000;

// ---------------------------------------------------------------------------------------------------
// Planning
// ---------------------------------------------------------------------------------------------------

function readOrderOf(sort: SortSpec | undefined, timeField: string): ReadOrder {
  if (sort === undefined) return { kind: 'natural' };
  const keys = Object.keys(sort);
  if (keys.length === 0) return { kind: 'natural' };
  if (keys.length === 1 && keys[0] === timeField)
    return { kind: 'time', direction: bsonNumberValue(sort[timeField]) === -1 ? -1 : 1 };
  return { kind: 'blocking', sort: compileSort(sort) };
}

function sortDependencies(order: ReadOrder, timeField: string): FieldDependencies {
  switch (order.kind) {
    case 'natural':
      return new Set();
    case 'time':
      return new Set([timeField]);
    case 'blocking':
      return new Set(order.sort.keys.map((k) => k.path[0] as string));
    default: {
      const never: never = order;
      return never;
    }
  }
}

function planFind(ctx: ReaderContext, filter: QueryFilter, options: FindOptions): ReadPlan {
  const { timeField, metaField, bucketMaxSpanSeconds } = ctx.options;
  const order = readOrderOf(
    options.sort === undefined ? undefined : findSortDocument(options.sort),
    timeField,
  );
  // The event filter is a subset of the filter: its dependencies are covered by the filter's.
  const needed = unionDependencies(filterDependencies(filter), sortDependencies(order, timeField));
  const projection = planProjection(options.projection, needed);
  return {
    filter,
    timeField,
    metaField,
    bucketMaxSpanSeconds,
    fixedBuckets: areTimeseriesBucketsFixed(ctx.options),
    unpack: projection.unpack,
    post: projection.post,
    order,
    skip: Math.max(0, Math.trunc(options.skip ?? 0)),
    limit: Math.abs(Math.trunc(options.limit ?? 0)),
  };
}

/** Decide whether `_id` bounds are safe (see {@link ReaderContext.idBounds}). */
async function resolveIdBounds(ctx: ReaderContext, plan: ReadPlan): Promise<IdBounds> {
  const policy = ctx.idBounds ?? 'detect';
  if (policy !== 'detect') return policy;
  if (!mentionsField(plan.filter, plan.timeField)) return 'use';
  const probe = {
    $or: [
      { [`control.min.${plan.timeField}`]: { $lt: new Date(0) } },
      { [`control.max.${plan.timeField}`]: { $gte: new Date(OID_RANGE_END_MS) } },
    ],
  };
  for await (const _bucket of ctx.storage.find(ctx.bucketsNs, probe, { projection: { _id: 1 }, limit: 1 })) {
    return 'omit';
  }
  return 'use';
}

// ---------------------------------------------------------------------------------------------------
// Execution
// ---------------------------------------------------------------------------------------------------

function timeMsOf(doc: MeasurementDocument, timeField: string): number {
  const t = getOwnField(doc, timeField);
  return t instanceof Date ? t.getTime() : Number.NaN;
}

/** The control bound of a bucket used as the merge frontier, as a heap key. */
function bucketFrontierKey(bucket: StoredBucket, timeField: string, direction: 1 | -1): number {
  const control = getOwnField(bucket, 'control');
  if (!isPlainObject(control)) return Number.NEGATIVE_INFINITY;
  const bound = getOwnField(control, direction === 1 ? 'min' : 'max');
  const t = isPlainObject(bound) ? getOwnField(bound, timeField) : undefined;
  return t instanceof Date ? direction * t.getTime() : Number.NEGATIVE_INFINITY;
}

/**
 * Matching measurements in the plan's order, before skip/limit/projection, in batches (one per bucket read).
 * Each document is fresh and owned by the caller, and so is each batch.
 */
async function* matchingBatches(
  ctx: ReaderContext,
  plan: ReadPlan,
  state: ExecutionState,
): AsyncGenerator<MeasurementDocument[]> {
  const idBounds = await resolveIdBounds(ctx, plan);
  const predicates = createBucketPredicates(plan.filter, {
    timeField: plan.timeField,
    metaField: plan.metaField,
    bucketMaxSpanSeconds: plan.bucketMaxSpanSeconds,
    fixedBuckets: plan.fixedBuckets,
    idBounds,
  });
  state.bucketFilter = predicates.bucketFilter;
  state.eventFilter = predicates.eventFilter;
  // Compiled once per query: the per-row test walks a prebuilt tree and creates no closures.
  const rowFilter = planRowFilter(predicates.eventFilter);
  const spec = {
    timeField: plan.timeField,
    metaField: plan.metaField,
    selection: plan.unpack,
    columnDecoder: ctx.columnDecoder ?? bsonColumnDecoder,
  };
  const order = plan.order;
  if (order.kind !== 'time' && plan.limit > 0) {
    // A limit ends the reads itself (see executeFind): no bucket is read ahead of it.
    for await (const bucket of ctx.storage.find(ctx.bucketsNs, predicates.bucketFilter)) {
      state.bucketsExamined++;
      const batch: MeasurementDocument[] = [];
      unpackMatching(openBucket(bucket, spec), rowFilter, batch);
      if (batch.length > 0) yield batch;
    }
    return;
  }
  if (order.kind !== 'time') {
    // One bucket read ahead: the last batch is yielded once the storage has said there is no more.
    const buckets = ctx.storage.find(ctx.bucketsNs, predicates.bucketFilter)[Symbol.asyncIterator]();
    let pending: MeasurementDocument[] | undefined;
    try {
      for (;;) {
        const next = await buckets.next();
        if (next.done === true) break;
        state.bucketsExamined++;
        const batch: MeasurementDocument[] = [];
        unpackMatching(openBucket(next.value, spec), rowFilter, batch);
        if (batch.length === 0) continue;
        if (pending !== undefined) yield pending;
        pending = batch;
      }
    } finally {
      await buckets.return?.();
    }
    state.readsDone = true;
    if (pending !== undefined) yield pending;
    return;
  }
  // Time-ordered merge. Buckets arrive by control.min (asc) or control.max (desc); every measurement of a
  // later bucket is at or after that bound, so measurements waiting in the heap up to the bound are final.
  const direction = order.direction;
  const sortField = direction === 1 ? `control.min.${plan.timeField}` : `control.max.${plan.timeField}`;
  const heap = makeMeasurementHeap();
  const rows: MeasurementDocument[] = [];
  for await (const bucket of ctx.storage.find(ctx.bucketsNs, predicates.bucketFilter, {
    sort: { [sortField]: direction },
  })) {
    state.bucketsExamined++;
    const frontier = bucketFrontierKey(bucket, plan.timeField, direction);
    const final: MeasurementDocument[] = [];
    while (heap.keys.length > 0 && heapPeekKey(heap) <= frontier)
      final.push(heapPop(heap) as MeasurementDocument);
    if (final.length > 0) yield final;
    unpackMatching(openBucket(bucket, spec), rowFilter, rows);
    for (const doc of rows) heapPush(heap, direction * timeMsOf(doc, plan.timeField), doc);
    rows.length = 0;
  }
  state.readsDone = true;
  const rest: MeasurementDocument[] = [];
  while (heap.keys.length > 0) rest.push(heapPop(heap) as MeasurementDocument);
  if (rest.length > 0) yield rest;
}

/** The plan's results, in batches: order, skip, limit and projection applied. */
async function* executeFind(
  ctx: ReaderContext,
  plan: ReadPlan,
  state: ExecutionState,
): AsyncGenerator<MeasurementDocument[]> {
  let source: AsyncIterable<MeasurementDocument[]> = matchingBatches(ctx, plan, state);
  if (plan.order.kind === 'blocking') source = sortedBlocking(source, plan.order.sort, state);
  let toSkip = plan.skip;
  const post = plan.post;
  for await (const batch of source) {
    // The batch is ours: results are written back into it.
    const start = Math.min(toSkip, batch.length);
    toSkip -= start;
    let n = batch.length - start;
    const remaining = plan.limit > 0 ? plan.limit - state.nReturned : n;
    if (n > remaining) n = remaining;
    for (let k = 0; k < n; k++) batch[k] = applyPostProjection(post, batch[start + k] as MeasurementDocument);
    batch.length = n;
    state.nReturned += n;
    // Returning (after this batch) closes the storage cursor: no further bucket is read.
    const limitReached = plan.limit > 0 && state.nReturned >= plan.limit;
    if (limitReached) state.readsDone = true;
    if (n > 0) yield batch;
    if (limitReached) return;
  }
}

/** A blocking sort (stable: equal keys keep their scan order), as one batch. */
async function* sortedBlocking(
  source: AsyncIterable<MeasurementDocument[]>,
  sort: CompiledSort,
  state: ExecutionState,
): AsyncGenerator<MeasurementDocument[]> {
  const all: MeasurementDocument[] = [];
  for await (const batch of source) for (const doc of batch) all.push(doc);
  state.readsDone = true;
  all.sort((a, b) => compareBySort(a, b, sort));
  yield all;
}

/** One execution of a query: its documents in batches, its counters recorded in `state`. @internal */
export type ReaderRun = (
  ctx: ReaderContext,
  state: ExecutionState,
) => AsyncIterable<ReadonlyArray<MeasurementDocument>>;

/**
 * A cursor over measurements with `explain()`.
 *
 * @typeParam T - the document type the caller expects (unchecked, as the driver's cursors).
 * @example
 * ```ts
 * const cursor = find(ctx, { sensor: 'a' }, { sort: { ts: -1 }, limit: 1 });
 * const [latest] = await cursor.toArray();
 * const { executionStats } = await cursor.explain();
 * ```
 */
export class ReaderCursor<T extends object = MeasurementDocument> extends Cursor<T> {
  readonly #ctx: ReaderContext;
  readonly #run: ReaderRun;

  /**
   * @param ctx - the reader context.
   * @param run - produces the documents of one execution in batches, recording its counters.
   * @internal use {@link find} or {@link aggregate}.
   */
  constructor(ctx: ReaderContext, run: ReaderRun) {
    // The pulls after the execution's last read come from memory: not guarded (see readsDone).
    let state: ExecutionState | undefined;
    const guard = ctx.guard;
    const unlessReadsDone: BatchGuard | undefined =
      guard === undefined ? undefined : (pull) => (state?.readsDone === true ? pull() : guard(pull));
    // `T` is the caller's claim about the documents (as the driver's `find<T>()`): not checked.
    super(
      () => run(ctx, (state = newExecutionState())) as AsyncIterable<ReadonlyArray<T>>,
      'batches',
      unlessReadsDone,
    );
    this.#ctx = ctx;
    this.#run = run;
  }

  /**
   * Run the query once more to completion (independently of this cursor's iteration) and report how it
   * used the buckets.
   *
   * @returns bucket and event filters and execution counters.
   * @throws the guard's error (see {@link ReaderContext.guard}) when it refuses.
   */
  async explain(): Promise<ExplainResult> {
    const guard = this.#ctx.guard;
    return guard === undefined ? await this.#explain() : await guard(() => this.#explain());
  }

  async #explain(): Promise<ExplainResult> {
    const state = newExecutionState();
    for await (const _batch of this.#run(this.#ctx, state)) {
      // Drain: counters are recorded by the execution itself.
    }
    const totalBucketsInCollection = await this.#ctx.storage.countDocuments(this.#ctx.bucketsNs);
    return {
      bucketFilter: state.bucketFilter,
      eventFilter: state.eventFilter,
      executionStats: {
        totalBucketsInCollection,
        totalBucketsExamined: state.bucketsExamined,
        nReturned: state.nReturned,
      },
    };
  }
}

/**
 * Find measurements (the time-series view's `find`).
 *
 * @param ctx - storage, namespace and options of the collection.
 * @param filter - a MongoDB filter over measurements.
 * @param options - projection, sort, skip, limit.
 * @returns a lazy cursor; nothing is read before it is iterated.
 * @throws {@link TimeseriesError} `BadValue` for a projection mixing inclusion and exclusion; iteration
 * rejects with the unpacker's errors for malformed buckets.
 * @example
 * ```ts
 * const ctx = { storage: engine.storage, bucketsNs: coll.bucketsNamespace, options: coll.options };
 * for await (const m of find(ctx, { sensor: 'a', ts: { $gte: since } }, { projection: { temp: 1 } })) use(m);
 * ```
 */
export function find(ctx: ReaderContext, filter: QueryFilter = {}, options: FindOptions = {}): ReaderCursor {
  const plan = planFind(ctx, filter, options);
  return new ReaderCursor(ctx, (c, state) => executeFind(c, plan, state));
}

/**
 * Count matching measurements. Buckets selected by a metaField-only filter are counted without being
 * unpacked.
 *
 * @param ctx - the reader context.
 * @param filter - a MongoDB filter over measurements.
 * @returns the number of matching measurements.
 */
export async function countDocuments(ctx: ReaderContext, filter: QueryFilter = {}): Promise<number> {
  const plan = planFind(ctx, filter, { projection: { _id: 0 } });
  const idBounds = await resolveIdBounds(ctx, plan);
  const predicates = createBucketPredicates(filter, {
    timeField: plan.timeField,
    metaField: plan.metaField,
    bucketMaxSpanSeconds: plan.bucketMaxSpanSeconds,
    fixedBuckets: plan.fixedBuckets,
    idBounds,
  });
  const decoder = ctx.columnDecoder ?? bsonColumnDecoder;
  let n = 0;
  if (predicates.eventFilter === undefined) {
    for await (const bucket of ctx.storage.find(ctx.bucketsNs, predicates.bucketFilter)) {
      n += bucketMeasurementCount(bucket, plan.timeField, decoder);
    }
    return n;
  }
  const deps = filterDependencies(predicates.eventFilter);
  const selection: FieldSelection = deps === 'all' ? { kind: 'all' } : { kind: 'include', fields: deps };
  const spec = { timeField: plan.timeField, metaField: plan.metaField, selection, columnDecoder: decoder };
  const rowFilter = planRowFilter(predicates.eventFilter);
  for await (const bucket of ctx.storage.find(ctx.bucketsNs, predicates.bucketFilter)) {
    n += countMatching(openBucket(bucket, spec), rowFilter);
  }
  return n;
}

// ---------------------------------------------------------------------------------------------------
// Aggregation
// ---------------------------------------------------------------------------------------------------

/** An aggregation stage. */
export type PipelineStage = Readonly<Record<string, unknown>>;

/** Stages that transform each document independently: they can run on chunks of the stream. */
const PER_DOCUMENT_STAGES: ReadonlySet<string> = new Set([
  '$match',
  '$project',
  '$addFields',
  '$set',
  '$unset',
  '$replaceRoot',
  '$replaceWith',
  '$unwind',
]);

/** Documents handed to mingo at once when the rest of the pipeline is per-document. */
const CHUNK_SIZE = 1024;

function splitLeadingMatch(pipeline: ReadonlyArray<PipelineStage>): {
  filter: QueryFilter;
  rest: ReadonlyArray<PipelineStage>;
} {
  const matches: QueryFilter[] = [];
  let i = 0;
  for (; i < pipeline.length; i++) {
    const stage = pipeline[i] as PipelineStage;
    const keys = Object.keys(stage);
    if (keys.length !== 1 || keys[0] !== '$match' || !isPlainObject(stage.$match)) break;
    matches.push(stage.$match);
  }
  const filter =
    matches.length === 0 ? {} : matches.length === 1 ? (matches[0] as QueryFilter) : { $and: matches };
  return { filter, rest: pipeline.slice(i) };
}

async function* executeAggregate(
  ctx: ReaderContext,
  plan: ReadPlan,
  rest: ReadonlyArray<PipelineStage>,
  state: ExecutionState,
): AsyncGenerator<MeasurementDocument[]> {
  const matching = matchingBatches(ctx, plan, state);
  const source = plan.limit > 0 ? firstDocuments(matching, plan.limit, state) : matching;
  if (rest.length === 0) {
    for await (const batch of source) {
      state.nReturned += batch.length;
      yield batch;
    }
    return;
  }
  // mingo runs the rest of the pipeline but its `$sort` stages, on the documents' numbers as the driver
  // promotes them (mingo-values); its untyped errors become MongoDB's (query-validation).
  const segments = segmentsOf(rest);
  const [first] = segments;
  if (segments.length === 1 && first?.kind === 'mingo' && rest.every(isPerDocumentStage)) {
    // Chunks keep memory bounded while amortising mingo's per-run setup.
    const { aggregator } = first;
    let chunk: MeasurementDocument[] = [];
    for await (const batch of source) {
      for (const doc of batch) chunk.push(mingoValue(doc) as MeasurementDocument);
      if (chunk.length < CHUNK_SIZE) continue;
      const out = mingoCall(() => aggregator.run<MeasurementDocument>(chunk));
      chunk = [];
      state.nReturned += out.length;
      if (out.length > 0) yield out;
    }
    state.readsDone = true;
    const out = mingoCall(() => aggregator.run<MeasurementDocument>(chunk));
    state.nReturned += out.length;
    if (out.length > 0) yield out;
    return;
  }
  // A blocking stage ($group, $sort, $limit...) needs its whole input, as in the server.
  let out: MeasurementDocument[] = [];
  for await (const batch of source) for (const doc of batch) out.push(mingoValue(doc) as MeasurementDocument);
  state.readsDone = true;
  for (const segment of segments) {
    if (segment.kind === 'sort') out.sort((a, b) => compareBySort(a, b, segment.sort));
    else out = mingoCall(() => segment.aggregator.run<MeasurementDocument>(out));
  }
  state.nReturned += out.length;
  yield out;
}

/** The first `limit` documents of `source` (batches it owns); no bucket is read after them. */
async function* firstDocuments(
  source: AsyncIterable<MeasurementDocument[]>,
  limit: number,
  state: ExecutionState,
): AsyncGenerator<MeasurementDocument[]> {
  let left = limit;
  for await (const batch of source) {
    if (batch.length > left) batch.length = left;
    left -= batch.length;
    if (left === 0) state.readsDone = true;
    if (batch.length > 0) yield batch;
    if (left === 0) return;
  }
}

/** Whether a stage transforms each document independently (it can run on chunks of the stream). */
function isPerDocumentStage(stage: PipelineStage): boolean {
  return PER_DOCUMENT_STAGES.has(Object.keys(stage)[0] ?? '');
}

/** A run of stages mingo evaluates, or a `$sort` evaluated here. */
type Segment =
  | { readonly kind: 'mingo'; readonly aggregator: Aggregator }
  | { readonly kind: 'sort'; readonly sort: CompiledSort };

/**
 * The pipeline cut at its `$sort` stages, which are evaluated here in MongoDB's order (as `find` sorts:
 * a `Decimal128`, a `Long` beyond 2^53 and strings compared as the server compares them; mingo compares
 * the first two by their strings and strings by UTF-16 code units); a `$sort` on `$meta` stays with
 * mingo. A pipeline without such a `$sort` is one mingo segment.
 */
function segmentsOf(rest: ReadonlyArray<PipelineStage>): Segment[] {
  const segments: Segment[] = [];
  let stages: PipelineStage[] = [];
  const flush = (): void => {
    if (stages.length === 0) return;
    const run = stages as Array<Record<string, unknown>>;
    segments.push({
      kind: 'mingo',
      aggregator: mingoCall(() => pipelineAggregator(run, { jsonSchemaValidator })),
    });
    stages = [];
  };
  for (const stage of rest) {
    const sort = sortOfStage(stage);
    if (sort === undefined) {
      stages.push(stage);
      continue;
    }
    flush();
    segments.push({ kind: 'sort', sort });
  }
  flush();
  return segments;
}

/** The sort of a `$sort` stage whose keys are all field paths with a direction of 1 or -1. */
function sortOfStage(stage: PipelineStage): CompiledSort | undefined {
  const keys = Object.keys(stage);
  if (keys.length !== 1 || keys[0] !== '$sort' || !isPlainObject(stage.$sort)) return undefined;
  const spec: Record<string, 1 | -1> = {};
  for (const [path, direction] of Object.entries(stage.$sort)) {
    const n = bsonNumberValue(direction);
    if (n !== 1 && n !== -1) return undefined;
    defineField(spec, path, n);
  }
  return compileSort(spec);
}

/**
 * Aggregate over measurements. Leading `$match` stages are pushed down to the buckets (as {@link find}
 * does), only the fields the rest of the pipeline reads are unpacked, and the rest runs in mingo on the
 * unpacked stream.
 *
 * The stages after the pushed-down `$match` are evaluated by mingo, on the documents' numbers as the
 * MongoDB driver promotes them by default: an integral double (`Double`) and an int64 (`Long`) that fits
 * in a JS number come out of such a pipeline as JS numbers. A `$sort` of field paths is evaluated here,
 * in the server's order (as `find` sorts). Caveats, in the other stages: mingo compares a `Decimal128` or
 * a `Long` beyond 2^53 by its decimal string and leaves it out of `$sum` and `$avg`, and orders strings
 * by UTF-16 code units (the server by UTF-8 bytes: they differ only between characters above U+E000 and
 * those beyond U+FFFF).
 *
 * @param ctx - the reader context.
 * @param pipeline - aggregation stages.
 * @returns a lazy cursor.
 * @example
 * ```ts
 * await aggregate(ctx, [{ $match: { sensor: 'a' } }, { $group: { _id: null, avg: { $avg: '$temp' } } }]).toArray();
 * ```
 */
export function aggregate(ctx: ReaderContext, pipeline: ReadonlyArray<PipelineStage>): ReaderCursor {
  // A `$project`'s flags as numbers (mingo took an `Int32(1)` for a literal).
  const stages = pipeline.map((stage) => {
    const spec = getOwnField(stage, '$project');
    return isPlainObject(spec) && Object.keys(stage).length === 1 ? { $project: numericFlags(spec) } : stage;
  });
  const { filter, rest: afterMatch } = splitLeadingMatch(stages);
  const deps = pipelineDependencies(afterMatch);
  const needed = deps === 'all' ? 'all' : unionDependencies(deps, filterDependencies(filter));
  const unpack: FieldSelection = needed === 'all' ? { kind: 'all' } : { kind: 'include', fields: needed };
  const { timeField, metaField, bucketMaxSpanSeconds } = ctx.options;
  // `$sort` on the time field then `$limit` ("the latest n"): read in time order and stop, as find does.
  const head = timeSortedLimit(afterMatch, timeField);
  const rest = head === undefined ? afterMatch : afterMatch.slice(2);
  const plan: ReadPlan = {
    filter,
    timeField,
    metaField,
    bucketMaxSpanSeconds,
    fixedBuckets: areTimeseriesBucketsFixed(ctx.options),
    unpack,
    post: { kind: 'none' },
    order: head === undefined ? { kind: 'natural' } : { kind: 'time', direction: head.direction },
    skip: 0,
    limit: head?.limit ?? 0,
  };
  return new ReaderCursor(ctx, (c, state) => executeAggregate(c, plan, rest, state));
}

/**
 * The direction and count of a pipeline that starts with `{$sort: {<time>: ±1}}` and `{$limit: n}`
 * (after its leading `$match`), or `undefined` for any other start.
 */
function timeSortedLimit(
  stages: ReadonlyArray<PipelineStage>,
  timeField: string,
): { readonly direction: 1 | -1; readonly limit: number } | undefined {
  const [sortStage, limitStage] = stages;
  if (sortStage === undefined || limitStage === undefined) return undefined;
  if (Object.keys(sortStage).length !== 1 || Object.keys(limitStage).length !== 1) return undefined;
  const sort = getOwnField(sortStage, '$sort');
  if (!isPlainObject(sort) || Object.keys(sort).length !== 1 || !hasOwnField(sort, timeField))
    return undefined;
  const direction = bsonNumberValue(sort[timeField]);
  const limit = bsonNumberValue(getOwnField(limitStage, '$limit'));
  if ((direction !== 1 && direction !== -1) || limit === undefined) return undefined;
  return Number.isSafeInteger(limit) && limit > 0 ? { direction, limit } : undefined;
}
