/**
 * A storage that accepts every bucket write and keeps nothing: what the memory benchmarks ingest into, so
 * that the heap they measure is the engine's own.
 *
 * Like `MemoryStorage` it takes compressed buckets' columns from the catalog's encoders when enough
 * measurements wait (and throws them away), so the catalog keeps what it keeps over `MemoryStorage`.
 */
import { MemoryStorage } from '../src/index.js';
import { deferredFirstCommitOf } from '../src/bucket-format/compressed-bucket.js';
import type { BucketWrite, BucketWriteOutcome, StoredBucket, StorageUpdateResult } from '../src/index.js';

/** A `MemoryStorage` whose bucket writes succeed without storing anything. */
export class DiscardingStorage extends MemoryStorage {
  override insertOne(_ns: string, _doc: StoredBucket): Promise<void> {
    return Promise.resolve();
  }

  override applyCommit(): Promise<StorageUpdateResult> {
    return Promise.resolve({ kind: 'updated' });
  }

  override commitWrites(_ns: string, writes: ReadonlyArray<BucketWrite>): Promise<BucketWriteOutcome[]> {
    for (const write of writes) {
      if (write.kind === 'insert') {
        const deferred = deferredFirstCommitOf(write.document)?.columns;
        const count = Number((write.document.control as { count?: unknown }).count);
        if (deferred?.shouldDrain() === true) deferred.takeTails(count, discard);
      } else if (write.commit.format === 'compressed') {
        const { deferred, count } = write.commit;
        if (deferred?.shouldDrain() === true) deferred.takeTails(count, discard);
      }
    }
    return Promise.resolve(writes.map(() => ({ kind: 'applied' })));
  }
}

function discard(): void {
  // The tails are dropped: nothing is stored.
}
