import type { BucketCommit } from '../../src/bucket-format/bucket-document.js';
import type { CounterUpdate } from '../../src/storage/counter-update.js';
import { MemoryStorage } from '../../src/storage/memory-storage.js';
import type {
  BucketFilter,
  BucketUpdateDocument,
  BucketWrite,
  BucketWriteOutcome,
  CommitWritesOptions,
  StorageFindOptions,
  StorageUpdateResult,
  StoredBucket,
} from '../../src/storage/storage.js';

/** What the next intercepted write does. */
export type WriteFault =
  { readonly kind: 'fail'; readonly error: Error } | { readonly kind: 'block'; readonly gate: Promise<void> };

/**
 * A MemoryStorage whose writes (insertOne, applyCommit, updateOne, upsertOne, applyCounters, and each write of commitWrites) can be
 * made to fail or to wait on a gate, in the order faults are queued, and whose reads (find, visitDocuments) can be made to fail. Deterministic: no timers.
 */
export class FaultyStorage extends MemoryStorage {
  readonly faults: WriteFault[] = [];
  /** Errors the next finds throw before yielding anything, one per find, in order. */
  readonly readFaults: Error[] = [];
  reads = 0;
  writes = 0;
  /** Writes started and not finished, and the most seen at once. */
  inFlight = 0;
  maxInFlight = 0;
  /** {@inheritDoc Storage.writeConcurrency} */
  readonly writeConcurrency: number;

  /** {@inheritDoc Storage.atomicOrderedCommits} */
  override readonly atomicOrderedCommits: boolean;

  /**
   * @param writeConcurrency - what the storage tells the engine (1: one write at a time).
   * @param options - `commitWrites: false`: without `commitWrites`; `atomicOrderedCommits: false`: an
   *   ordered `commitWrites` keeps the writes before a failed one, as MongoDB's ordered `bulkWrite` does.
   */
  constructor(
    writeConcurrency = 1,
    options: { readonly commitWrites?: boolean; readonly atomicOrderedCommits?: boolean } = {},
  ) {
    super();
    this.writeConcurrency = writeConcurrency;
    // Without commitWrites the engine writes one bucket at a time (as for a backend that lacks it).
    if (options.commitWrites === false) Object.defineProperty(this, 'commitWrites', { value: undefined });
    this.atomicOrderedCommits = options.atomicOrderedCommits ?? true;
  }

  /**
   * Each write meets the next queued fault in turn. An ordered call that meets a failure writes nothing
   * when atomic; otherwise the writes before the failed one are applied and those after it are not.
   */
  override async commitWrites(
    ns: string,
    writes: ReadonlyArray<BucketWrite>,
    options: CommitWritesOptions,
  ): Promise<BucketWriteOutcome[]> {
    const outcomes = new Array<BucketWriteOutcome>(writes.length);
    const passed: number[] = [];
    for (let i = 0; i < writes.length; i++) {
      try {
        await this.#intercept();
        passed.push(i);
      } catch (error) {
        outcomes[i] = { kind: 'failed', error };
        if (options.ordered && this.atomicOrderedCommits) {
          for (let j = 0; j < writes.length; j++) if (j !== i) outcomes[j] = { kind: 'notApplied' };
          return outcomes;
        }
        if (options.ordered) {
          // As an ordered bulkWrite: what came before the failure is applied (a guard miss is no error).
          for (let j = i + 1; j < writes.length; j++) outcomes[j] = { kind: 'notApplied' };
          const applied = await super.commitWrites(
            ns,
            passed.map((k) => writes[k] as BucketWrite),
            { ordered: false },
          );
          passed.forEach((k, j) => (outcomes[k] = applied[j] as BucketWriteOutcome));
          return outcomes;
        }
      }
    }
    const written = await super.commitWrites(
      ns,
      passed.map((i) => writes[i] as BucketWrite),
      options,
    );
    passed.forEach((i, j) => (outcomes[i] = written[j] as BucketWriteOutcome));
    return outcomes;
  }

  async #intercept(): Promise<void> {
    this.writes++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      const fault = this.faults.shift();
      // Every write yields once, so that writes the engine starts together overlap.
      await Promise.resolve();
      if (fault === undefined) return;
      if (fault.kind === 'fail') throw fault.error;
      await fault.gate;
    } finally {
      this.inFlight--;
    }
  }

  override async insertOne(ns: string, doc: StoredBucket): Promise<void> {
    await this.#intercept();
    return super.insertOne(ns, doc);
  }

  override async applyCommit(ns: string, commit: BucketCommit): Promise<StorageUpdateResult> {
    await this.#intercept();
    return super.applyCommit(ns, commit);
  }

  override async upsertOne(
    ns: string,
    filter: BucketFilter,
    update: BucketUpdateDocument,
  ): Promise<'updated' | 'inserted'> {
    await this.#intercept();
    return super.upsertOne(ns, filter, update);
  }

  override async updateOne(
    ns: string,
    filter: BucketFilter,
    update: BucketUpdateDocument,
  ): Promise<StorageUpdateResult> {
    await this.#intercept();
    return super.updateOne(ns, filter, update);
  }

  override async applyCounters(
    ns: string,
    id: string,
    update: CounterUpdate,
    upsert: 'upsert' | 'noUpsert',
  ): Promise<'updated' | 'inserted' | 'notMatched'> {
    await this.#intercept();
    return super.applyCounters(ns, id, update, upsert);
  }

  override async visitDocuments(
    ns: string,
    filter: BucketFilter,
    visit: (doc: Readonly<StoredBucket>) => void,
  ): Promise<number> {
    this.reads++;
    await Promise.resolve();
    const fault = this.readFaults.shift();
    if (fault !== undefined) throw fault;
    return super.visitDocuments(ns, filter, visit);
  }

  override async *find(
    ns: string,
    filter: BucketFilter,
    options?: StorageFindOptions,
  ): AsyncIterable<StoredBucket> {
    this.reads++;
    await Promise.resolve();
    const fault = this.readFaults.shift();
    if (fault !== undefined) throw fault;
    yield* super.find(ns, filter, options);
  }
}
