/**
 * A write batch: measurements staged into one bucket that one writer commits to storage
 * (`bucket_catalog/write_batch.h`, docs/mongodb-behaviour.md §7).
 *
 * States:
 *
 * | state      | entered by                        | next                          |
 * |------------|-----------------------------------|-------------------------------|
 * | `staging`  | creation (`insert`)               | `prepared` (prepareCommit), `finished` (abort) |
 * | `prepared` | `prepareCommit`                   | `finished` (finish or abort)  |
 * | `finished` | `finish` (result) / `abort` (error) | —                           |
 *
 * Unordered inserts of different callers share one batch per bucket (opId 0: group commit); an ordered
 * insert gets its own opId. The first caller to claim commit rights commits; the others wait on
 * `result`.
 *
 * @packageDocumentation
 */
import type { Measurement } from '../bucket-format/bucket-document.js';
import { Deferred } from '../util/deferred.js';
import type { Bucket } from './bucket.js';
import type { ExecutionStatsController } from './execution-stats.js';
import type { InsertItem } from './bucket-catalog-internal.js';

/** What a committed batch reports to its waiters. */
export interface CommitInfo {
  /** Whether the commit inserted the bucket document (first commit) or updated it. */
  readonly kind: 'insert' | 'update';
  /** Hex id of the bucket written. */
  readonly bucketId: string;
}

/** Lifecycle state of a batch. */
export type WriteBatchState = 'staging' | 'prepared' | 'finished';

/** A batch of measurements for one bucket. */
export interface WriteBatch {
  /** The bucket the measurements go to. */
  readonly bucket: Bucket;
  /** 0 for batches shared by unordered writers; a caller-unique id otherwise. */
  readonly opId: number;
  /** Stats of the collection and the catalog. */
  readonly stats: ExecutionStatsController;
  /** Staged items, in staging order. */
  readonly items: InsertItem[];
  /**
   * Staged measurements, in staging order: the items' measurements, as a new array (an item packed as a
   * row of its call builds its measurement when asked; see `catalog/packed-item.ts`).
   */
  readonly measurements: Measurement[];
  /**
   * Columns this batch's write creates in the stored document, set at prepareCommit (not at staging:
   * another writer's batch may have staged a field first but commit later).
   */
  createdColumns: ReadonlyArray<string>;
  /** Whether the bucket was opened because its series had no open bucket. */
  openedDueToMetadata: boolean;
  /** Estimated bytes of the staged measurements that the commit replaces by measured ones (8.0 format). */
  uncommittedEstimate: number;
  /** Change of the compressed bucket's column bytes made by this commit (8.0 format), set at prepare. */
  compressedSizeDelta: number;
  /** Measurements already committed to the bucket when this batch was prepared. */
  numPreviouslyCommittedMeasurements: number;
  /** Whether a writer claimed the right to commit. */
  commitRights: boolean;
  /** opId of the writer that claimed commit rights (-1 when unknown). */
  claimedBy: number;
  /** opId of the first writer that staged into the batch, and how many measurements it staged. */
  firstWriter: number;
  /** Measurements staged by `firstWriter`. */
  firstWriterCount: number;
  /**
   * Measurements staged by other writers, by opId: made only when a second writer joins (group commit),
   * so a batch of one writer allocates no map.
   */
  otherWriters: Map<number, number> | undefined;
  /**
   * Scratch of the commit path: the last round of an insert call that listed this batch, so that a
   * call lists each of its batches once without a map (set and read in one synchronous pass).
   */
  roundMark: number;
  /** Lifecycle state. */
  state: WriteBatchState;
  /** Settled by `finish` (fulfilled) or `abort` (rejected). */
  readonly result: Deferred<CommitInfo>;
  /** The staging result of each measurement staged into this batch (one object per batch). */
  readonly staged: { readonly kind: 'staged'; readonly batch: WriteBatch };
}

/** The columns of a batch that created none (shared: a batch per commit, most create nothing). */
const kNoColumns: ReadonlyArray<string> = Object.freeze([]);

/** What each batch's item array is copied from (an array of objects, one element). */
const kOneItem: ReadonlyArray<InsertItem | undefined> = [undefined];

/** The measurements of `items`, in their order. */
function measurementsOf(items: ReadonlyArray<InsertItem>): Measurement[] {
  const out = new Array<Measurement>(items.length);
  for (let i = 0; i < items.length; i++) out[i] = (items[i] as InsertItem).measurement;
  return out;
}

/** The staging result shared by the measurements of one batch. */
class Staged {
  readonly kind = 'staged';
  constructor(readonly batch: WriteBatch) {}
}

/** A batch (see {@link WriteBatch}); made by {@link makeWriteBatch}. */
class Batch implements WriteBatch {
  readonly items: InsertItem[];
  createdColumns: ReadonlyArray<string> = kNoColumns;
  openedDueToMetadata = false;
  uncommittedEstimate = 0;
  compressedSizeDelta = 0;
  numPreviouslyCommittedMeasurements = 0;
  commitRights = false;
  claimedBy = -1;
  firstWriter = -1;
  firstWriterCount = 0;
  otherWriters: Map<number, number> | undefined = undefined;
  roundMark = 0;
  state: WriteBatchState = 'staging';
  readonly result = new Deferred<CommitInfo>();
  readonly staged: Staged = new Staged(this);

  constructor(
    readonly bucket: Bucket,
    readonly opId: number,
    readonly stats: ExecutionStatsController,
    first: InsertItem,
  ) {
    // Not a literal either (see makeWriteBatch), nor `Array.of` (a generic builtin, 100 ns a call): a
    // copy of a one-element array. Made with its element, the array is a fraction of the size of one grown
    // by a first push, and most batches hold one measurement.
    const items = kOneItem.slice() as InsertItem[];
    items[0] = first;
    this.items = items;
  }

  /** {@inheritDoc WriteBatch.measurements} */
  get measurements(): Measurement[] {
    return measurementsOf(this.items);
  }
}

/**
 * A new batch holding its first measurement.
 *
 * Batches are made by a class, not a literal: V8 tracks the objects of each object or array literal and,
 * when nearly all of them are alive at a young-generation collection, allocates that literal's objects in
 * the old generation from then on ("allocation-site pretenuring"). A call of a few thousand measurements
 * commits within a few young collections: made by a literal, its batches were tenured by the first
 * collection that fell inside a call, then died in the old generation, and the measurements a dead batch
 * pointed to survived young collections and were promoted too. (Calls of many thousands once had their
 * batches made by a literal, which V8 tenured: while each measurement was a copy, copying their batches
 * through the young generation cost 1.2x the time; with measurements held as rows of their call, the
 * class is as fast for them, and a literal's `measurements` getter cost 20% at 100 000 series.)
 *
 * @param bucket - the bucket.
 * @param opId - 0 to share with other unordered writers, else the caller's id.
 * @param stats - the stats controller of the bucket's collection.
 * @param first - the batch's first item.
 * @returns the batch.
 */
export function makeWriteBatch(
  bucket: Bucket,
  opId: number,
  stats: ExecutionStatsController,
  first: InsertItem,
): WriteBatch {
  return new Batch(bucket, opId, stats, first);
}

/**
 * Record one more measurement staged into `batch` by writer `opId`.
 *
 * @param batch - the batch.
 * @param opId - the staging writer.
 */
export function countStagedBy(batch: WriteBatch, opId: number): void {
  if (batch.firstWriter === opId || batch.firstWriter === -1) {
    batch.firstWriter = opId;
    batch.firstWriterCount++;
    return;
  }
  batch.otherWriters ??= new Map();
  batch.otherWriters.set(opId, (batch.otherWriters.get(opId) ?? 0) + 1);
}

/**
 * How many measurements writer `opId` staged into `batch`.
 *
 * @param batch - the batch.
 * @param opId - a writer.
 * @returns the count.
 */
export function stagedBy(batch: WriteBatch, opId: number): number {
  return opId === batch.firstWriter ? batch.firstWriterCount : (batch.otherWriters?.get(opId) ?? 0);
}

/**
 * Claim the right to commit `batch`. Exactly one caller gets `true`.
 *
 * @param batch - the batch.
 * @param opId - the claiming writer's opId, if known.
 * @returns whether this caller must commit the batch.
 */
export function claimWriteBatchCommitRights(batch: WriteBatch, opId = -1): boolean {
  if (batch.commitRights) return false;
  batch.commitRights = true;
  batch.claimedBy = opId;
  return true;
}
