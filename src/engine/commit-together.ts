/**
 * The commits of one insert call in one storage call (`Storage.commitWrites`), as the server writes the
 * batches of one insert command together: prepare every batch this writer claims, write them all, then
 * settle each batch by its own outcome (a guard miss or a failure affects that bucket's batch only).
 *
 * @packageDocumentation
 */
import type { BucketCatalog, PreparedCommit } from '../catalog/bucket-catalog.js';
import type { WriteBatch } from '../catalog/write-batch.js';
import { ErrorCodes, TimeseriesError } from '../errors.js';
import type { CommitRollups } from '../rollups/commit-hook.js';
import type { BucketWrite, BucketWriteOutcome, Storage } from '../storage/storage.js';

/** Where the batches go. */
export interface SettleContext {
  readonly catalog: BucketCatalog;
  readonly storage: Storage;
  readonly bucketsNs: string;
  /** The collection's rollups, folded in each commit (absent: none). */
  readonly rollups?: CommitRollups;
}

/** A batch prepared for writing, with its write. */
type Prepared = Exclude<PreparedCommit, { kind: 'aborted' }>;

/**
 * A prepared commit as the storage write it describes: the same object, not a copy per batch. A write is
 * `kind` with the document or the commit; the prepared commit's `bucketId` beside them is not read. A
 * bucket document is a record of fields (its interface only lacks the index signature).
 */
function asWrite(step: Prepared): BucketWrite {
  return step as BucketWrite;
}

/** Whether a batch's published result is a failure that stops an ordered call (not a cleared bucket). */
export function failedForGood(batch: WriteBatch): boolean {
  const result = batch.result;
  return (
    result.state === 'rejected' &&
    !(
      TimeseriesError.isTimeseriesError(result.error) &&
      result.error.code === ErrorCodes.TimeseriesBucketCleared
    )
  );
}

/**
 * Commit the claimable batches of one call in one `commitWrites` call. Never throws: each batch's outcome
 * is published through its result.
 *
 * Batches are prepared in bucket-id order whatever `batches`' order, so that writers holding several
 * prepared buckets at once never wait for each other in a cycle.
 *
 * @param ctx - catalog, storage (with `commitWrites`) and buckets namespace.
 * @param batches - the call's batches: in input order (by first measurement) when ordered.
 * @param opId - this writer's opId.
 * @param ordered - an ordered call: the writes go in input order and the call stops at the first failed
 *   batch (the batches after it are aborted as cleared, so that their measurements before the failure
 *   are staged again).
 */
export async function commitTogether(
  ctx: SettleContext,
  batches: ReadonlyArray<WriteBatch>,
  opId: number,
  ordered: boolean,
): Promise<void> {
  const commitWrites = ctx.storage.commitWrites?.bind(ctx.storage);
  if (commitWrites === undefined) throw new TypeError('commitTogether needs Storage.commitWrites');
  // Positions in `batches` in the order to prepare them (unordered calls pass them in that order).
  const order = ordered ? bucketIdOrder(batches) : undefined;
  // What each batch writes (by position in `batches`): no map per call.
  const prepared = new Array<Prepared | undefined>(batches.length);
  for (let k = 0; k < batches.length; k++) {
    const i = order === undefined ? k : (order[k] as number);
    const batch = batches[i] as WriteBatch;
    if (!ctx.catalog.claimWriteBatchCommitRights(batch, opId)) continue;
    try {
      const step = ctx.catalog.prepareCommitNow(batch) ?? (await ctx.catalog.prepareCommit(batch));
      if (step.kind !== 'aborted') prepared[i] = step;
    } catch (error) {
      // A failure building the bucket document aborts this batch like a failed write.
      await settleWrite(ctx, batch, undefined, { kind: 'failed', error });
    }
  }
  // Ordered: the call is written whole or not at all. A batch that could not be prepared (its bucket was
  // cleared, or building its write failed) stops it: its measurements are staged again or fail, and a
  // batch holds any of the series' measurements, before or after them in input order, so none is written
  // now. Every prepared batch is aborted as cleared; the writer stages again what precedes a failure.
  if (ordered && prepared.includes(undefined)) {
    for (let i = 0; i < batches.length; i++) {
      const batch = batches[i] as WriteBatch;
      if (prepared[i] !== undefined || batch.result.state === 'pending') await abortStopped(ctx, batch);
    }
    return;
  }
  // What is sent: every prepared batch.
  const sent: number[] = [];
  const writes: BucketWrite[] = [];
  for (let i = 0; i < batches.length; i++) {
    const step = prepared[i];
    if (step === undefined) continue;
    sent.push(i);
    writes.push(asWrite(step));
  }
  if (writes.length === 0) return;
  let outcomes: ReadonlyArray<BucketWriteOutcome>;
  try {
    outcomes = await commitWrites(ctx.bucketsNs, writes, { ordered });
  } catch (error) {
    const failed: BucketWriteOutcome = { kind: 'failed', error };
    outcomes = writes.map(() => failed);
  }
  // Every written batch is folded into the rollups before any result is published: one rollup write per
  // touched slot and group for the whole call. Without rollups, no step (and no promise round trip).
  const settle =
    ctx.rollups === undefined || ctx.rollups.empty ? ctx : await foldWritten(ctx, batches, sent, outcomes);
  let stopped = false;
  for (let k = 0; k < sent.length; k++) {
    const i = sent[k] as number;
    const batch = batches[i] as WriteBatch;
    if (stopped) {
      await abortStopped(ctx, batch);
      continue;
    }
    const outcome = outcomes[k] ?? kNotApplied;
    if (!settledNow(settle, batch, outcome)) await settleWrite(settle, batch, prepared[i], outcome);
    stopped = ordered && failedForGood(batch);
  }
}

/**
 * The positions of `batches` in bucket-id order (the order batches are committed in, so that writers
 * holding several buckets never wait for each other in a cycle).
 *
 * A least-significant-digit radix sort on the ids' 12 bytes, skipping the bytes every id shares: a call's
 * buckets mostly share their start time and differ in a few bytes of the counter. Each batch's bucket id
 * is read once. A comparison sort cost about 90 ns per batch on a bulk load's call: its buckets, made
 * stripe by stripe in an earlier call, come in 32 interleaved ascending runs.
 *
 * @param batches - batches of distinct buckets.
 * @returns their positions, in ascending order of bucket `_id`.
 */
export function bucketIdOrder(batches: ReadonlyArray<WriteBatch>): number[] {
  const n = batches.length;
  // A call of one batch (an insertOne) has nothing to sort.
  if (n <= 1) return n === 0 ? [] : [0];
  if (sortKeys.length < 4 * n) {
    sortKeys = new Int32Array(8 * n);
    sortOrder = new Int32Array(2 * n);
    sortNext = new Int32Array(2 * n);
  }
  // The id's bytes three at a time (`BucketId.order0..3`), four numbers per batch.
  const keys = sortKeys;
  // Per three-byte group, the bits in which some id differs from the first.
  let differ0 = 0;
  let differ1 = 0;
  let differ2 = 0;
  let differ3 = 0;
  for (let i = 0; i < n; i++) {
    const id = (batches[i] as WriteBatch).bucket.id;
    keys[4 * i] = id.order0;
    keys[4 * i + 1] = id.order1;
    keys[4 * i + 2] = id.order2;
    keys[4 * i + 3] = id.order3;
    differ0 |= id.order0 ^ (keys[0] as number);
    differ1 |= id.order1 ^ (keys[1] as number);
    differ2 |= id.order2 ^ (keys[2] as number);
    differ3 |= id.order3 ^ (keys[3] as number);
  }
  const differ = [differ0, differ1, differ2, differ3];
  let order = sortOrder;
  for (let i = 0; i < n; i++) order[i] = i;
  let next = sortNext;
  const starts = sortStarts;
  // Byte 11 (the last) first; each pass is stable, so earlier bytes decide ties of later ones.
  for (let byte = 11; byte >= 0; byte--) {
    const group = (byte / 3) | 0;
    const shift = 8 * (2 - (byte % 3));
    if ((((differ[group] as number) >>> shift) & 0xff) === 0) continue;
    starts.fill(0);
    for (let i = 0; i < n; i++) {
      const b = ((keys[4 * i + group] as number) >>> shift) & 0xff;
      starts[b] = (starts[b] as number) + 1;
    }
    for (let b = 0, at = 0; b < 256; b++) {
      const count = starts[b] as number;
      starts[b] = at;
      at += count;
    }
    for (let k = 0; k < n; k++) {
      const i = order[k] as number;
      const b = ((keys[4 * i + group] as number) >>> shift) & 0xff;
      next[starts[b] as number] = i;
      starts[b] = (starts[b] as number) + 1;
    }
    const swap = order;
    order = next;
    next = swap;
  }
  // A plain array for the callers (`Array.from` of a typed array cost a third of the sort).
  const positions: number[] = [];
  for (let k = 0; k < n; k++) positions.push(order[k] as number);
  return positions;
}

/**
 * {@link bucketIdOrder}'s scratch, reused by every call (it runs to completion before returning): typed
 * arrays of more than 64 bytes live outside V8's heap, and making four per insert call (a kilobyte of
 * counts among them) was a twentieth of an `insertOne`.
 */
let sortKeys = new Int32Array(4 * 64);
let sortOrder = new Int32Array(64);
let sortNext = new Int32Array(64);
const sortStarts = new Int32Array(256);

const kNotApplied: BucketWriteOutcome = Object.freeze({ kind: 'notApplied' });

/**
 * Settle a written batch without a promise round trip when nothing needs one: the write applied, no
 * rollup folds it and its stripe is free (the usual case, paid per batch).
 *
 * @returns whether the batch was settled (otherwise call {@link settleWrite}).
 */
function settledNow(ctx: SettleContext, batch: WriteBatch, outcome: BucketWriteOutcome): boolean {
  if (outcome.kind !== 'applied' || (ctx.rollups !== undefined && !ctx.rollups.empty)) return false;
  return ctx.catalog.finishNow(batch);
}

/**
 * Fold the batches whose writes were applied into the collection's rollups.
 *
 * @returns the context to settle the batches with (without rollups: they are folded).
 */
async function foldWritten(
  ctx: SettleContext,
  batches: ReadonlyArray<WriteBatch>,
  sent: ReadonlyArray<number>,
  outcomes: ReadonlyArray<BucketWriteOutcome>,
): Promise<SettleContext> {
  const written: WriteBatch[] = [];
  for (let k = 0; k < sent.length; k++) {
    if (outcomes[k]?.kind === 'applied') written.push(batches[sent[k] as number] as WriteBatch);
  }
  await (ctx.rollups as CommitRollups).fold(written);
  return { catalog: ctx.catalog, storage: ctx.storage, bucketsNs: ctx.bucketsNs };
}

/** Abort a batch of an ordered call that stopped before it (its measurements may be staged again). */
async function abortStopped(ctx: SettleContext, batch: WriteBatch): Promise<void> {
  await ctx.catalog.abort(
    batch,
    new TimeseriesError('TimeseriesBucketCleared', 'ordered insert stopped at a failed measurement'),
  );
}

/**
 * Publish the outcome of a prepared batch's write: finish it when written, otherwise abort it (a guard
 * miss, a duplicate `_id` or a write not applied are retried on a new bucket; other failures reject it).
 *
 * @param ctx - catalog and rollups.
 * @param batch - the prepared batch (or one whose preparation failed, with a `failed` outcome).
 * @param prepared - what was written (absent when preparation failed).
 * @param outcome - what became of the write.
 */
export async function settleWrite(
  ctx: SettleContext,
  batch: WriteBatch,
  prepared: Prepared | undefined,
  outcome: BucketWriteOutcome,
): Promise<void> {
  switch (outcome.kind) {
    case 'applied':
      // Stored, not yet acknowledged: the rollups count the batch exactly once (src/rollups/rollup-set.ts).
      if (ctx.rollups !== undefined && !ctx.rollups.empty) await ctx.rollups.fold([batch]);
      if (!ctx.catalog.finishNow(batch)) await ctx.catalog.finish(batch);
      return;
    case 'notMatched': {
      // Someone else changed or removed the bucket: its measurements go to a new bucket.
      const id = (prepared as Prepared).bucketId.toHexString();
      await ctx.catalog.abort(
        batch,
        new TimeseriesError(
          'TimeseriesBucketCleared',
          `Time-series bucket ${id} was changed by another writer`,
          {
            bucketId: id,
          },
        ),
      );
      return;
    }
    case 'notApplied':
      await abortStopped(ctx, batch);
      return;
    case 'failed': {
      const error = outcome.error;
      const duplicate = TimeseriesError.isTimeseriesError(error) && error.code === ErrorCodes.DuplicateKey;
      if (duplicate) ctx.catalog.reseedBucketIds();
      // A duplicate bucket _id is retried with a new id, as the server does; other failures reject the batch.
      await ctx.catalog.abort(
        batch,
        duplicate
          ? new TimeseriesError(
              'TimeseriesBucketCleared',
              'bucket _id already exists; retrying with a new id',
              {
                cause: error,
              },
            )
          : error,
      );
      return;
    }
    default: {
      const never: never = outcome;
      throw new TypeError(`unknown write outcome ${String(never)}`);
    }
  }
}
