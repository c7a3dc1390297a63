import type { BucketCommit } from '../../src/bucket-format/bucket-document.js';
import { MemoryStorage } from '../../src/storage/memory-storage.js';
import type {
  BucketFilter,
  BucketUpdateDocument,
  StorageUpdateResult,
  StoredBucket,
} from '../../src/storage/storage.js';

/** What the next intercepted write does. */
export type WriteFault =
  { readonly kind: 'fail'; readonly error: Error } | { readonly kind: 'block'; readonly gate: Promise<void> };

/**
 * A MemoryStorage whose bucket writes (insertOne, applyCommit, updateOne) can be made to fail or to wait on a gate,
 * in the order faults are queued. Deterministic: no timers.
 */
export class FaultyStorage extends MemoryStorage {
  readonly faults: WriteFault[] = [];
  writes = 0;

  async #intercept(): Promise<void> {
    this.writes++;
    const fault = this.faults.shift();
    if (fault === undefined) return;
    if (fault.kind === 'fail') throw fault.error;
    await fault.gate;
  }

  override async insertOne(ns: string, doc: StoredBucket): Promise<void> {
    await this.#intercept();
    return super.insertOne(ns, doc);
  }

  override async applyCommit(ns: string, commit: BucketCommit): Promise<StorageUpdateResult> {
    await this.#intercept();
    return super.applyCommit(ns, commit);
  }

  override async updateOne(
    ns: string,
    filter: BucketFilter,
    update: BucketUpdateDocument,
  ): Promise<StorageUpdateResult> {
    await this.#intercept();
    return super.updateOne(ns, filter, update);
  }
}
