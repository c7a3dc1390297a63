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
import type { CounterUpdate } from '../storage/counter-update.js';
import type { StoredBucket } from '../storage/storage.js';
import type { RollupTarget } from './counter-writes.js';

/** How a three-step write went (for stats). */
export type ThreeStepOutcome = 'updated' | 'initialised' | 'initialisedByOther';

/**
 * Apply `update` to the document `_id`, creating it from `skeleton()` first when missing.
 *
 * @param target - storage, counter writes and namespace.
 * @param id - the document `_id`.
 * @param update - the `$inc` counter update.
 * @param skeleton - builds the zero-filled document (only called when it is missing).
 * @returns which path was taken.
 * @throws the storage's error; {@link TimeseriesError} `WriteConflict` if the document was removed between
 *   steps 2 and 3.
 */
export async function threeStepWrite(
  target: RollupTarget,
  id: string,
  update: CounterUpdate,
  skeleton: () => StoredBucket,
): Promise<ThreeStepOutcome> {
  const { storage, counters, ns } = target;
  if ((await counters.update(ns, id, update)) === 'updated') return 'updated';
  let outcome: ThreeStepOutcome = 'initialised';
  try {
    await storage.insertOne(ns, skeleton());
  } catch (error) {
    if (!TimeseriesError.isTimeseriesError(error) || error.code !== ErrorCodes.DuplicateKey) throw error;
    outcome = 'initialisedByOther';
  }
  if ((await counters.update(ns, id, update)) === 'updated') return outcome;
  throw new TimeseriesError('WriteConflict', `calendar document ${id} was removed during its initialisation`);
}
