/**
 * Resolving ambiguous writes. A write whose reply was lost (network error, failover) may or may not have
 * been applied; retrying it blindly could apply a commit twice or, worse, make the catalog believe another
 * writer took the bucket and re-stage measurements that are already stored (a duplicate). Before reporting
 * "duplicate `_id`" or "guard did not match" after such a failure, the storage reads the bucket back and
 * checks whether its own write is already there. Other writers may have appended to the bucket since (a
 * bucket is reopened by any writer), and closed it, compressing it.
 *
 * @packageDocumentation
 */
import { Buffer } from 'node:buffer';

import { deserialize, serialize } from 'bson';
import type { Binary } from 'bson';
import { updateMany } from 'mingo';
import type { PipelineStage } from 'mingo/updater';

import { decompressBucket } from '../bucket-format/bucket-compression.js';
import { isClosedBucket } from '../bucket-format/bucket-document.js';
import { decodeColumn } from '../bucket-format/bson-column/decoder.js';
import { binaryBytes } from '../bucket-format/compressed-bucket.js';
import type { BucketUpdateDocument, StoredBucket } from '../storage/storage.js';
import { isPlainObject } from '../util/bson-value.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import { canonicalizeDocument, kReadBsonOptions, sameBsonDocument, sameBsonValue } from './bson-values.js';
import { storedColumns } from './compressed-columns.js';

/**
 * Whether the stored bucket already holds what `update` writes: applying `update` to it again changes no
 * top-level field other than `data` and `control`, and adds or changes no `data.<field>.<index>` cell (a
 * whole new column counts cell by cell, since later commits of other writers may have appended to it).
 * `control` is not compared: later commits of other writers legitimately widen `control.min`/`max`.
 *
 * Data cells are append-only under the commit protocol (a later commit writes only indices that did not
 * exist), and each cell holds one measurement's value, so "every cell of this update is present with the
 * same BSON value" means "this commit was applied". Until the bucket closes: a compressed bucket is
 * searched row by row instead.
 *
 * @param stored - the bucket as read back (not mutated).
 * @param update - update operators or pipeline of the commit.
 * @returns `true` if the update's effect is already present.
 */
export function updateAlreadyApplied(stored: StoredBucket, update: BucketUpdateDocument): boolean {
  const control = getOwnField(stored, 'control');
  const version = isPlainObject(control) ? Number(getOwnField(control, 'version')) : Number.NaN;
  // Compressed since, or rewritten by a delete (marked closed): the cells moved, rows are looked for.
  if (version === 2 || version === 3 || isClosedBucket(stored)) return rowsAlreadyStored(stored, update);
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
 * {@link updateAlreadyApplied} for a bucket compressed since the update was sent: another writer closed it
 * (a version-1 bucket is compressed when it closes), so its cells are no longer addressable by index, and
 * compressing sorted its rows by time. Each measurement the update writes (its cells of one index, found
 * by applying it to the bucket with every column emptied) must be one of the bucket's rows, decompressed,
 * each row standing for one measurement at most. A row with the same values stands for the same
 * measurement, as an equal cell does in a version-1 bucket.
 */
function rowsAlreadyStored(stored: StoredBucket, update: BucketUpdateDocument): boolean {
  const base = decompressBucket(copyDocument(stored));
  const data = getOwnField(base, 'data');
  if (!isPlainObject(data)) return false;
  const emptied: Record<string, unknown> = {};
  for (const field of Object.keys(data)) defineField(emptied, field, {});
  // `base` is this call's own copy, and its columns are kept in `data`: it becomes the probe.
  defineField(base, 'data', emptied);
  const docs = [base];
  updateMany(docs, {}, update as PipelineStage[], { cloneMode: 'none' });
  const written = getOwnField(docs[0] ?? {}, 'data');
  if (!isPlainObject(written)) return false;
  return rowsIn(rowsOf(written), rowsOf(data), isClosedBucket(stored));
}

/**
 * Whether a bucket inserted by this writer is the stored one: exactly, or with other writers' measurements
 * added since (one reopened the bucket and appended to it, and may have closed it, compressing it). Then
 * it holds each measurement the insert wrote as one of its rows, or, of the same series (every top-level
 * field but `control` and `data` the same), it was rewritten by a delete since (marked closed: the delete
 * may have removed some of them). Another writer's update of the metaField may have changed the series
 * since: a bucket of another meta is this insert when it holds its rows. A bucket id drawn by another
 * writer for another series, the one real duplicate, holds other measurements.
 *
 * @param stored - the bucket as read back (not mutated).
 * @param inserted - the document this writer inserted.
 * @returns `true` if the insert is in.
 */
export function insertAlreadyWritten(stored: StoredBucket, inserted: Readonly<StoredBucket>): boolean {
  if (sameBsonDocument(stored, inserted)) return true;
  const now = decompressBucket(copyDocument(stored));
  const then = decompressBucket(copyDocument(inserted));
  let sameSeries = true;
  for (const field of new Set([...Object.keys(now), ...Object.keys(then)])) {
    if (field === 'control' || field === 'data') continue;
    if (sameBsonValue(getOwnField(now, field), getOwnField(then, field))) continue;
    if (field !== 'meta') return false;
    sameSeries = false;
  }
  // Rewritten by a delete since (marked closed): some of the inserted measurements may be gone for good.
  if (sameSeries && isClosedBucket(now)) return true;
  const data = getOwnField(now, 'data');
  const written = getOwnField(then, 'data');
  if (!isPlainObject(data) || !isPlainObject(written)) return false;
  return rowsContained(rowsOf(written), rowsOf(data));
}

/**
 * Whether a compressed bucket's commit is in the stored bucket: the bucket holds the commit's count and
 * the columns as sent (nothing changed it since), or the measurements the commit appended are among its
 * rows ({@link rowsIn}): other writers may have appended since, and a delete may have rewritten the
 * bucket since, removing some of them.
 *
 * @param stored - the bucket as read back (not mutated).
 * @param commit - the commit's counts: measurements before it and after it.
 * @param columns - each column's whole binary as the commit sent it.
 * @returns `true` if the commit is in.
 */
export function compressedCommitAlreadyApplied(
  stored: StoredBucket,
  commit: { readonly numPreviouslyCommittedMeasurements: number; readonly count: number },
  columns: ReadonlyMap<string, Readonly<Pick<Binary, 'buffer' | 'position'>>>,
): boolean {
  const control = getOwnField(stored, 'control') as { count?: unknown } | undefined;
  if (Number(control?.count) === commit.count) {
    const now = storedColumns(stored);
    let same = true;
    for (const [field, binary] of columns) {
      const bytes = now.get(field);
      if (bytes === undefined || Buffer.compare(bytes, binaryBytes(binary)) !== 0) same = false;
    }
    if (same) return true;
  }
  // The commit's measurements, as version-1 cells of their indices.
  const appended: Record<string, unknown> = {};
  for (const [field, binary] of columns) {
    const values = decodeColumn(binaryBytes(binary));
    const cells: Record<string, unknown> = {};
    for (let i = commit.numPreviouslyCommittedMeasurements; i < commit.count; i++) {
      if (values[i] !== undefined) defineField(cells, String(i), values[i]);
    }
    defineField(appended, field, cells);
  }
  let data: unknown;
  try {
    data = getOwnField(decompressBucket(copyDocument(stored)), 'data');
  } catch {
    return false;
  }
  if (!isPlainObject(data)) return false;
  return rowsIn(rowsOf(appended), rowsOf(data), isClosedBucket(stored));
}

/**
 * Whether a commit's `rows` are in a bucket's rows `among`: each of them, each row standing for one
 * measurement (two equal measurements need two equal rows); or, in a bucket a delete has rewritten since
 * (`trimmed`: marked closed), one of them, since a commit is applied whole and the delete may have
 * removed the others. None left is taken as not applied: its measurements are written again, as if
 * they had come after the delete, rather than risk losing one never stored.
 */
function rowsIn(
  rows: ReadonlyArray<ReadonlyMap<string, unknown>>,
  among: ReadonlyArray<ReadonlyMap<string, unknown>>,
  trimmed: boolean,
): boolean {
  if (!trimmed) return rowsContained(rows, among);
  return rows.some((row) => among.some((candidate) => sameRow(candidate, row)));
}

/** Whether each of `rows` is one of `among`, each of `among` standing for one of `rows` at most. */
function rowsContained(
  rows: ReadonlyArray<ReadonlyMap<string, unknown>>,
  among: ReadonlyArray<ReadonlyMap<string, unknown>>,
): boolean {
  const taken = new Set<number>();
  for (const row of rows) {
    const at = among.findIndex((candidate, i) => !taken.has(i) && sameRow(candidate, row));
    if (at < 0) return false;
    taken.add(at);
  }
  return true;
}

/** The rows of version-1 columns: per index present in any column, its cells by field. */
function rowsOf(data: Readonly<Record<string, unknown>>): Array<Map<string, unknown>> {
  const rows = new Map<string, Map<string, unknown>>();
  for (const field of Object.keys(data)) {
    const column = getOwnField(data, field);
    if (!isPlainObject(column)) continue;
    for (const index of Object.keys(column)) {
      let row = rows.get(index);
      if (row === undefined) {
        row = new Map();
        rows.set(index, row);
      }
      row.set(field, getOwnField(column, index));
    }
  }
  return [...rows.values()];
}

/** Whether two rows have the same fields with the same BSON values. */
function sameRow(a: ReadonlyMap<string, unknown>, b: ReadonlyMap<string, unknown>): boolean {
  if (a.size !== b.size) return false;
  for (const [field, value] of a) if (!b.has(field) || !sameBsonValue(value, b.get(field))) return false;
  return true;
}

/**
 * Whether a stored document is exactly `written` (same BSON bytes): a replacement is in only if nothing
 * changed the bucket since.
 *
 * @param stored - the document read back.
 * @param written - the document this writer replaced the bucket with.
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
