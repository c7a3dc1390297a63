/**
 * A storage that accepts every bucket write and keeps nothing: what the memory benchmarks ingest into, so
 * that the heap they measure is the engine's own.
 */
import { MemoryStorage } from '../src/index.js';
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
    return Promise.resolve(writes.map(() => ({ kind: 'applied' })));
  }
}
