/**
 * The three-step initialisation of a pre-allocated document (calendar documents): an upsert cannot create
 * the zero-filled skeleton and `$inc` paths inside it in one update, so
 *
 * 1. `$inc` without upsert; done when a document matched (the common case);
 * 2. insert the skeleton; a duplicate key means another writer inserted it first, which is fine;
 * 3. `$inc` again: the document exists now.
 *
 * Each step is a single-document atomic write, so several processes initialising the same document stay
 * exact.
 *
 * @packageDocumentation
 */
import { ErrorCodes, TimeseriesError } from '../errors.js';
import type { Storage, StoredBucket } from '../storage/storage.js';

/** How a three-step write went (for stats). */
export type ThreeStepOutcome = 'updated' | 'initialised' | 'initialisedByOther';

/**
 * Apply `update` to the document `_id`, creating it from `skeleton()` first when missing.
 *
 * @param storage - the storage.
 * @param ns - namespace.
 * @param id - the document `_id`.
 * @param update - the `$inc` update.
 * @param skeleton - builds the zero-filled document (only called when it is missing).
 * @returns which path was taken.
 * @throws the storage's error; {@link TimeseriesError} `WriteConflict` if the document was removed between
 *   steps 2 and 3.
 */
export async function threeStepWrite(
  storage: Storage,
  ns: string,
  id: string,
  update: Readonly<Record<string, unknown>>,
  skeleton: () => StoredBucket,
): Promise<ThreeStepOutcome> {
  if ((await storage.updateOne(ns, { _id: id }, update)).kind === 'updated') return 'updated';
  let outcome: ThreeStepOutcome = 'initialised';
  try {
    await storage.insertOne(ns, skeleton());
  } catch (error) {
    if (!TimeseriesError.isTimeseriesError(error) || error.code !== ErrorCodes.DuplicateKey) throw error;
    outcome = 'initialisedByOther';
  }
  if ((await storage.updateOne(ns, { _id: id }, update)).kind === 'updated') return outcome;
  throw new TimeseriesError('WriteConflict', `calendar document ${id} was removed during its initialisation`);
}
