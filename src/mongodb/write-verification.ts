/**
 * Resolving ambiguous writes. A write whose reply was lost (network error, failover) may or may not have
 * been applied; retrying it blindly could apply a commit twice or, worse, make the catalog believe another
 * writer took the bucket and re-stage measurements that are already stored (a duplicate). Before reporting
 * "duplicate `_id`" or "guard did not match" after such a failure, the storage reads the bucket back and
 * checks whether its own write is already there.
 *
 * @packageDocumentation
 */
import { deserialize, serialize } from 'bson';
import { updateMany } from 'mingo';
import type { PipelineStage } from 'mingo/updater';

import type { BucketUpdateDocument, StoredBucket } from '../storage/storage.js';
import { isPlainObject } from '../util/bson-value.js';
import { getOwnField, hasOwnField } from '../util/safe-record.js';
import { canonicalizeDocument, kReadBsonOptions, sameBsonDocument, sameBsonValue } from './bson-values.js';

/**
 * Whether the stored bucket already holds what `update` writes: applying `update` to it again changes no
 * top-level field other than `data` and `control`, and adds or changes no `data.<field>.<index>` cell (a
 * whole new column counts cell by cell, since later commits of other writers may have appended to it).
 * `control` is not compared: later commits of other writers legitimately widen `control.min`/`max`.
 *
 * Data cells are append-only under the commit protocol (a later commit writes only indices that did not
 * exist), and each cell holds one measurement's value, so "every cell of this update is present with the
 * same BSON value" means "this commit was applied".
 *
 * @param stored - the bucket as read back (not mutated).
 * @param update - update operators or pipeline of the commit.
 * @returns `true` if the update's effect is already present.
 */
export function updateAlreadyApplied(stored: StoredBucket, update: BucketUpdateDocument): boolean {
  const before = copyDocument(stored);
  const docs = [copyDocument(stored)];
  // mingo's root `updateMany` has every expression operator (`$setField`, `$getField`, `$literal`) that
  // pipeline updates use. cloneMode 'none': `docs` is a private copy that is only compared, never kept.
  updateMany(docs, {}, update as PipelineStage[], { cloneMode: 'none' });
  const after = docs[0] ?? {};
  for (const field of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (field === 'control') continue;
    const a = getOwnField(after, field);
    const b = getOwnField(before, field);
    if (field === 'data' ? !cellsPresent(a, b) : !sameBsonValue(a, b)) return false;
  }
  return true;
}

/**
 * Whether a stored document is exactly `written` (same BSON bytes).
 *
 * @param stored - the document read back.
 * @param written - the document this writer inserted or replaced.
 * @returns `true` if identical.
 */
export function documentAlreadyWritten(stored: StoredBucket, written: Readonly<StoredBucket>): boolean {
  return sameBsonDocument(stored, written);
}

function cellsPresent(after: unknown, before: unknown): boolean {
  if (!isPlainObject(after) || !isPlainObject(before)) return sameBsonValue(after, before);
  for (const field of Object.keys(after)) {
    if (!hasOwnField(before, field)) return false;
    const a = getOwnField(after, field);
    const b = getOwnField(before, field);
    if (isPlainObject(a) && isPlainObject(b)) {
      for (const key of Object.keys(a)) {
        if (!hasOwnField(b, key) || !sameBsonValue(getOwnField(a, key), getOwnField(b, key))) return false;
      }
    } else if (!sameBsonValue(a, b)) {
      return false;
    }
  }
  return true;
}

function copyDocument(doc: StoredBucket): StoredBucket {
  return canonicalizeDocument(deserialize(serialize(doc), kReadBsonOptions));
}
