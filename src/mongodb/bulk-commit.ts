/**
 * The bucket writes of one insert call as one `bulkWrite` (one round trip): new buckets as `insertOne`
 * operations, commits as guarded `updateOne` operations (a 5.x–7.x commit's cells, or the whole changed
 * columns of a compressed bucket), each write's outcome mapped back from the result (docs/mongodb.md).
 *
 * A bulk write reports errors per operation index but only the total `matchedCount`: when it falls short
 * of the updates sent (a guard miss), or after a retry (a lost reply), each update is checked by reading
 * its bucket, as single writes are after a lost reply.
 *
 * @packageDocumentation
 */

import type { AnyBulkWriteOperation, BulkWriteResult, Document, Filter } from 'mongodb';

import { bucketUpdateDocument, commitGuardFilter } from '../bucket-format/bucket-document.js';
import type { BucketCommit } from '../bucket-format/bucket-document.js';
import { TimeseriesError } from '../errors.js';
import type {
  BucketUpdateDocument,
  BucketWrite,
  BucketWriteOutcome,
  StoredBucket,
} from '../storage/storage.js';
import { spliceOntoStored } from './compressed-columns.js';
import type { CompressedColumnCache } from './compressed-columns.js';
import { canonicalizeDocument, kReadBsonOptions } from './bson-values.js';
import type { MongoCollectionLike } from './driver-shape.js';
import { kDuplicateKeyCode, MongoStorageError } from './mongo-storage-error.js';
import type { OpenBucketForm } from './mongo-storage-options.js';
import { compressedPlanApplied, planCompressedCommit, recordCompressedOutcome } from './open-bucket-form.js';
import type { CompressedCommitPlan, UncompressedOpenBuckets } from './open-bucket-form.js';
import { insertAlreadyWritten, updateAlreadyApplied } from './write-verification.js';

/**
 * What one write of the call sends, and how to tell afterwards whether it is stored. A compressed commit
 * whose bucket does not hold what it expects is not sent (`skipped`: `notMatched`).
 */
type Planned =
  | { readonly kind: 'insert'; readonly document: StoredBucket }
  | { readonly kind: 'update'; readonly commit: BucketCommit; readonly update: BucketUpdateDocument }
  | CompressedCommitPlan;

/** The buckets collection and what `MongoStorage` lends the bulk write. */
export interface BulkCommitTarget {
  /** Namespace (for the column cache). */
  readonly ns: string;
  /** The buckets collection, with `bulkWrite`. */
  readonly buckets: MongoCollectionLike & Required<Pick<MongoCollectionLike, 'bulkWrite'>>;
  /** Its name (for errors). */
  readonly collectionName: string;
  /** The compressed buckets' cached columns. */
  readonly columns: CompressedColumnCache;
  /** The storage's `openBucketForm`. */
  readonly openBucketForm: OpenBucketForm;
  /** The buckets held as version 1 on the server. */
  readonly uncompressed: UncompressedOpenBuckets;
  /** Run an attempt with the storage's retries (errors wrapped as `MongoStorage` does). */
  run<T>(attempt: (attemptNumber: number) => Promise<T>): Promise<T>;
}

const kApplied: BucketWriteOutcome = Object.freeze({ kind: 'applied' });
const kNotMatched: BucketWriteOutcome = Object.freeze({ kind: 'notMatched' });
const kNotApplied: BucketWriteOutcome = Object.freeze({ kind: 'notApplied' });

/**
 * Write the buckets of one call in one `bulkWrite`.
 *
 * @param target - collection, column cache and retries.
 * @param writes - the call's bucket writes.
 * @param ordered - stop at the first failed write (the server's ordered bulk write).
 * @returns one outcome per write.
 */
export async function bulkCommitWrites(
  target: BulkCommitTarget,
  writes: ReadonlyArray<BucketWrite>,
  ordered: boolean,
): Promise<BucketWriteOutcome[]> {
  // Each compressed commit spliced onto its cached bucket, once (unless the bucket is held as version 1:
  // its commit is cells); the misses are read in one find.
  const held = writes.map((write) =>
    write.kind === 'update' && write.commit.format === 'compressed'
      ? target.uncompressed.get(target.ns, write.commit.bucketId)
      : undefined,
  );
  const cached = writes.map((write, w) =>
    write.kind === 'update' && write.commit.format === 'compressed' && held[w] === undefined
      ? target.columns.splice(target.ns, write.commit)
      : undefined,
  );
  const stored = await readUncached(target, writes, (w) => cached[w] === undefined && held[w] === undefined);
  const planned: Planned[] = [];
  const operations: AnyBulkWriteOperation[] = [];
  for (let w = 0; w < writes.length; w++) {
    const write = writes[w] as BucketWrite;
    if (write.kind === 'insert') {
      planned.push({ kind: 'insert', document: write.document });
      operations.push({ insertOne: { document: write.document } });
      continue;
    }
    const commit = write.commit;
    if (commit.format === 'compressed') {
      let spliced = cached[w];
      if (spliced === undefined && held[w] === undefined) {
        // Not cached: spliced onto the stored columns, read for the whole call at once.
        const doc = stored.get(commit.bucketId.toHexString());
        spliced = doc === undefined ? undefined : spliceOntoStored(doc, commit);
      }
      const plan = planCompressedCommit(target.openBucketForm, held[w], commit, spliced);
      planned.push(plan);
      if (plan.kind !== 'skipped') {
        operations.push({ updateOne: { filter: plan.filter, update: asDriverUpdate(plan.update) } });
      }
      continue;
    }
    const update = bucketUpdateDocument(commit.update);
    planned.push({ kind: 'update', commit, update });
    operations.push({
      updateOne: { filter: commitGuardFilter(commit), update: asDriverUpdate(update) },
    });
  }
  const sent = planned.filter((plan) => plan.kind !== 'skipped');
  const results =
    sent.length === 0
      ? []
      : await target.run((attempt) => attemptBulk(target, sent, operations, ordered, attempt));
  let next = 0;
  const outcomes = planned.map((plan) =>
    plan.kind === 'skipped' ? kNotMatched : (results[next++] as BucketWriteOutcome),
  );
  planned.forEach((plan, i) => {
    if (plan.kind === 'insert') {
      if (outcomes[i] === kApplied) target.columns.remember(target.ns, plan.document);
    } else if (plan.kind !== 'update' && plan.kind !== 'skipped') {
      recordCompressedOutcome(target, target.ns, plan, outcomes[i] === kApplied);
    }
  });
  return outcomes;
}

/**
 * The stored buckets of the compressed commits whose columns are not known (`unknown`, per write), by
 * `_id` hex (one read).
 */
async function readUncached(
  target: BulkCommitTarget,
  writes: ReadonlyArray<BucketWrite>,
  unknown: (w: number) => boolean,
): Promise<Map<string, StoredBucket>> {
  const ids: unknown[] = [];
  writes.forEach((write, w) => {
    if (write.kind !== 'update' || write.commit.format !== 'compressed') return;
    if (unknown(w)) ids.push(write.commit.bucketId);
  });
  const found = new Map<string, StoredBucket>();
  if (ids.length === 0) return found;
  const docs = await target.run(() =>
    target.buckets.find({ _id: { $in: ids } } as Filter<Document>, kReadBsonOptions).toArray(),
  );
  for (const doc of docs) {
    const id = doc._id as { toHexString?: () => string } | undefined;
    if (typeof id?.toHexString === 'function') found.set(id.toHexString(), canonicalizeDocument(doc));
  }
  return found;
}

/** One attempt: send the bulk write and map its result back to each write. */
async function attemptBulk(
  target: BulkCommitTarget,
  planned: ReadonlyArray<Planned>,
  operations: AnyBulkWriteOperation[],
  ordered: boolean,
  attempt: number,
): Promise<BucketWriteOutcome[]> {
  let result: Pick<BulkWriteResult, 'matchedCount'> | undefined;
  const errors = new Map<number, unknown>();
  try {
    result = await target.buckets.bulkWrite(operations, { ordered });
  } catch (error) {
    const writeErrors = writeErrorsOf(error);
    // Not a per-operation failure (a network error, a timeout): retried whole, or reported whole.
    if (writeErrors === undefined) throw error;
    for (const w of writeErrors) errors.set(w.index, w);
    result = (error as { result?: Pick<BulkWriteResult, 'matchedCount'> }).result;
  }
  const firstError = errors.size === 0 ? planned.length : Math.min(...errors.keys());
  let updatesSent = 0;
  for (let i = 0; i < planned.length; i++) {
    if (planned[i]?.kind !== 'insert' && !errors.has(i) && !(ordered && i > firstError)) updatesSent++;
  }
  // On a first attempt the result is this attempt's alone: its matched count is exact.
  const matched = attempt === 0 && result !== undefined ? result.matchedCount : undefined;
  const outcomes = new Array<BucketWriteOutcome>(planned.length);
  const unresolved: number[] = [];
  for (let i = 0; i < planned.length; i++) {
    const plan = planned[i] as Planned;
    if (ordered && i > firstError) {
      // Not attempted this time; after a lost reply an earlier attempt may have written it.
      outcomes[i] = attempt > 0 && (await alreadyStored(target.buckets, plan)) ? kApplied : kNotApplied;
      continue;
    }
    const error = errors.get(i);
    if (error !== undefined) {
      outcomes[i] = await failedOutcome(target, plan, error, attempt);
      continue;
    }
    if (plan.kind === 'insert' || matched === updatesSent) outcomes[i] = kApplied;
    else unresolved.push(i);
  }
  if (unresolved.length === 0) return outcomes;
  // Some updates missed their guard, or a retry re-sent some: each bucket is read back. None matched on a
  // first attempt: none applied, whatever the buckets hold (another writer may have appended the same
  // values, which measurements without an id cannot tell from this write's).
  for (const i of unresolved) {
    const applied = matched !== 0 && (await alreadyStored(target.buckets, planned[i] as Planned));
    outcomes[i] = applied ? kApplied : kNotMatched;
  }
  return outcomes;
}

/** A write error of one operation: a duplicate `_id` (unless this call's own earlier attempt), or a failure. */
async function failedOutcome(
  target: BulkCommitTarget,
  plan: Planned,
  error: unknown,
  attempt: number,
): Promise<BucketWriteOutcome> {
  if (plan.kind === 'insert' && (error as { code?: unknown }).code === kDuplicateKeyCode) {
    // After a lost reply, the duplicate may be this writer's own earlier attempt.
    if (attempt > 0 && (await alreadyStored(target.buckets, plan))) return kApplied;
    return {
      kind: 'failed',
      error: new TimeseriesError('DuplicateKey', messageOf(error), {
        cause: error,
        ...bucketIdDetail(plan.document._id),
      }),
    };
  }
  return {
    kind: 'failed',
    error: new MongoStorageError({
      operation: 'bulkWrite',
      collection: target.collectionName,
      attempts: attempt + 1,
      cause: error,
    }),
  };
}

/** Whether the bucket already holds what a write sends (read back, as after a lost reply). */
async function alreadyStored(buckets: MongoCollectionLike, plan: Planned): Promise<boolean> {
  if (plan.kind === 'skipped') return false;
  const id = plan.kind === 'insert' ? plan.document._id : plan.commit.bucketId;
  const [doc] = await buckets
    .find({ _id: id } as Filter<Document>, { ...kReadBsonOptions, limit: 1 })
    .toArray();
  if (doc === undefined) return false;
  const stored = canonicalizeDocument(doc);
  if (plan.kind === 'insert') return insertAlreadyWritten(stored, plan.document);
  if (plan.kind === 'update') return updateAlreadyApplied(stored, plan.update);
  return compressedPlanApplied(stored, plan);
}

/** The per-operation errors of a driver `MongoBulkWriteError` (one or several), or `undefined`. */
function writeErrorsOf(error: unknown): ReadonlyArray<{ readonly index: number }> | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const writeErrors = (error as { writeErrors?: unknown }).writeErrors;
  const list = Array.isArray(writeErrors)
    ? (writeErrors as unknown[])
    : writeErrors === undefined
      ? []
      : [writeErrors];
  const valid = list.filter(
    (w): w is { index: number } =>
      typeof w === 'object' && w !== null && typeof (w as { index?: unknown }).index === 'number',
  );
  return valid.length === 0 ? undefined : valid;
}

function messageOf(error: unknown): string {
  const e = error as { errmsg?: unknown; message?: unknown };
  return String(e.errmsg ?? e.message ?? error);
}

function bucketIdDetail(id: unknown): { bucketId?: string } {
  const hex = (id as { toHexString?: unknown } | null | undefined)?.toHexString;
  return typeof hex === 'function' ? { bucketId: String(hex.call(id)) } : {};
}

function asDriverUpdate(update: BucketUpdateDocument): Document | Document[] {
  return Array.isArray(update) ? (update as Document[]) : update;
}
