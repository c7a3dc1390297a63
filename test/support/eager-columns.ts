/**
 * Make a `MemoryStorage` (or a subclass) receive every compressed commit's bytes, as `MongoStorage` does,
 * instead of taking the columns from the catalog's encoders when it needs them: the eager write path,
 * for tests that compare the two.
 */
import { kTakesDeferredColumns } from '../../src/storage/storage.js';

/**
 * Turn deferred columns off for `storage`.
 *
 * @param storage - a storage that takes deferred columns.
 * @returns the same storage.
 */
export function eagerColumns<T extends object>(storage: T): T {
  Object.defineProperty(storage, kTakesDeferredColumns, { value: false });
  return storage;
}
