/**
 * How a rollup's counter updates reach its storage, chosen once per storage: structured through
 * `Storage.applyCounters` when the storage has it (MemoryStorage: no update document is built, none is
 * parsed), otherwise as the documented MongoDB update documents through `upsertOne` / `updateOne`
 * (MongoStorage).
 *
 * @packageDocumentation
 */
import { counterUpdateDocument } from '../storage/counter-update.js';
import type { CounterUpdate } from '../storage/counter-update.js';
import type { Storage } from '../storage/storage.js';

/** What a counter write did. */
export type CounterWriteResult = 'updated' | 'inserted' | 'notMatched';

/** Counter writes to one storage. */
export interface CounterWrites {
  /**
   * Apply `update` to the document `id`, inserting `{ _id, ...setOnInsert }` first when missing.
   *
   * @param ns - namespace.
   * @param id - the document `_id`.
   * @param update - the counter update.
   * @returns `'updated'` or `'inserted'`.
   */
  readonly upsert: (ns: string, id: string, update: CounterUpdate) => Promise<CounterWriteResult>;
  /**
   * Apply `update` to the document `id` if it exists.
   *
   * @param ns - namespace.
   * @param id - the document `_id`.
   * @param update - the counter update (its `setOnInsert` is not used).
   * @returns `'updated'` or `'notMatched'`.
   */
  readonly update: (ns: string, id: string, update: CounterUpdate) => Promise<CounterWriteResult>;
}

/** What one commit-time write of a rollup did. */
export interface WriteCounts {
  /** Documents updated or inserted. */
  readonly documents: number;
  /** Calendar documents this writer initialised (three-step, step 2 succeeded). */
  readonly initialised: number;
}

/** Where one rollup writes: its storage, the counter writes chosen for that storage, its namespace. */
export interface RollupTarget {
  readonly storage: Storage;
  readonly counters: CounterWrites;
  readonly ns: string;
}

/**
 * The counter writes of a storage.
 *
 * @param storage - the storage (rollups require `upsertOne`; `applyCounters` is used when present).
 * @returns its counter writes.
 */
export function counterWritesOf(storage: Storage): CounterWrites {
  const applyCounters = storage.applyCounters?.bind(storage);
  if (applyCounters !== undefined) {
    return {
      upsert: (ns, id, update) => applyCounters(ns, id, update, 'upsert'),
      update: (ns, id, update) => applyCounters(ns, id, update, 'noUpsert'),
    };
  }
  return {
    upsert: (ns, id, update) => {
      if (storage.upsertOne === undefined) throw new TypeError('storage has no upsertOne');
      return storage.upsertOne(ns, { _id: id }, counterUpdateDocument(update));
    },
    update: async (ns, id, update) =>
      (await storage.updateOne(ns, { _id: id }, counterUpdateDocument(update))).kind === 'updated'
        ? 'updated'
        : 'notMatched',
  };
}
