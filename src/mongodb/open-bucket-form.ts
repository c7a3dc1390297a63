/**
 * How `MongoStorage` keeps an open compressed bucket on the server (`openBucketForm`, docs/mongodb.md,
 * "Open buckets on the server").
 *
 * The 8.0 server appends to a compressed bucket by a binary diff of its columns; a driver cannot send
 * one, and MQL cannot concatenate binaries, so a commit over the wire sends each column it extends whole.
 * A bucket that grows by a few measurements per commit (a bulk loader sends one per series per call)
 * then costs more per measurement with every commit. The other wire form is the 5.x–7.x one: the bucket
 * is version 1 on the server while open, each commit `$set`s its cells, and the bucket is compressed when
 * it closes.
 *
 * Under `'measured'` each bucket starts compressed, and the bytes its column replacements cost beyond what
 * the same commits would have cost as cells are added up; once they reach what rewriting the bucket as
 * version 1 costs, the commit that gets there rewrites it so (with its own measurements), and later
 * commits send cells. The bytes sent are then within about twice those of the better form for the
 * bucket's whole life, whichever it turns out to be (the rent-or-buy rule). `'compressed'` never
 * rewrites; `'uncompressed'` rewrites at the second commit. A bucket rewritten as version 1 is compressed
 * when the catalog closes it (`kCompressClosedBuckets`), or when a writer reopens it.
 *
 * @packageDocumentation
 */
import { calculateObjectSize } from 'bson';
import type { ObjectId } from 'bson';

import { decodeColumn } from '../bucket-format/bson-column/decoder.js';
import {
  bucketUpdateDocument,
  commitGuardFilter,
  makeBucketUpdate,
} from '../bucket-format/bucket-document.js';
import type { BucketCommit } from '../bucket-format/bucket-document.js';
import {
  binaryBytes,
  compressedCommitGuard,
  compressedCommitReplacementUpdate,
} from '../bucket-format/compressed-bucket.js';
import type { CommitRows, CompressedBucketCommit } from '../bucket-format/compressed-bucket.js';
import type { BucketUpdateDocument, StoredBucket } from '../storage/storage.js';
import { defineField, getOwnField, hasOwnField, isPathSafeFieldName } from '../util/safe-record.js';
import { forgetBuckets, keyOf, minMaxPaths, minMaxSetOps } from './compressed-columns.js';
import type { CompressedColumnCache, SplicedCommit, StoredMinMax } from './compressed-columns.js';
import type { OpenBucketForm } from './mongo-storage-options.js';
import { compressedCommitAlreadyApplied, updateAlreadyApplied } from './write-verification.js';

/** A bucket this storage holds as version 1 on the server while the catalog appends to it compressed. */
export interface HeldBucket {
  /** Measurements the stored document holds. */
  readonly count: number;
  /** Its columns. */
  readonly columns: ReadonlySet<string>;
  /** Its `control.min` and `control.max` as last written. */
  readonly minMax: StoredMinMax;
}

/** The buckets held as version 1 on the server, by namespace and `_id`. */
export class UncompressedOpenBuckets {
  readonly #held = new Map<string, HeldBucket>();

  /**
   * @param ns - namespace.
   * @param id - the bucket's `_id`.
   * @returns how the bucket is held, or `undefined` when it is not held as version 1.
   */
  get(ns: string, id: ObjectId): HeldBucket | undefined {
    return this.#held.get(keyOf(ns, id) as string);
  }

  /**
   * Record that the server holds the bucket as version 1 (after a rewrite or a commit of cells).
   *
   * @param ns - namespace.
   * @param id - the bucket's `_id`.
   * @param bucket - what the stored document holds now.
   */
  hold(ns: string, id: ObjectId, bucket: HeldBucket): void {
    this.#held.set(keyOf(ns, id) as string, bucket);
  }

  /**
   * Forget a bucket (a direct write changed it, or a commit to it did not apply), or every bucket of a
   * namespace.
   *
   * @param ns - namespace.
   * @param id - the bucket's `_id`; all of the namespace when absent.
   */
  forget(ns: string, id?: unknown): void {
    forgetBuckets(this.#held, ns, id);
  }

  /**
   * Of `ids`, those held as version 1, forgotten here (the catalog closed them: they are compressed now).
   *
   * @param ns - namespace.
   * @param ids - closed buckets.
   * @returns the ones held.
   */
  take(ns: string, ids: ReadonlyArray<ObjectId>): ObjectId[] {
    const taken: ObjectId[] = [];
    for (const id of ids) if (this.#held.delete(keyOf(ns, id) as string)) taken.push(id);
    return taken;
  }
}

/** How one compressed commit is sent, and how to tell afterwards whether it is stored. */
export type CompressedCommitPlan =
  /** The bucket does not hold what the commit expects (as far as this storage knows): not sent. */
  | { readonly kind: 'skipped' }
  /** Each column the commit extends, whole (the bucket stays compressed). */
  | {
      readonly kind: 'columns';
      readonly commit: CompressedBucketCommit;
      readonly spliced: SplicedCommit;
      readonly minMax: StoredMinMax;
      /** What the bucket's column replacements have cost beyond cells, this one included. */
      readonly excess: number;
      readonly filter: Readonly<Record<string, unknown>>;
      readonly update: BucketUpdateDocument;
    }
  /** The bucket rewritten as version 1, with the commit's measurements. */
  | {
      readonly kind: 'converted';
      readonly commit: CompressedBucketCommit;
      readonly spliced: SplicedCommit;
      readonly held: HeldBucket;
      readonly filter: Readonly<Record<string, unknown>>;
      readonly update: BucketUpdateDocument;
    }
  /** The commit's cells, appended to the bucket held as version 1. */
  | {
      readonly kind: 'cells';
      readonly commit: CompressedBucketCommit;
      readonly held: HeldBucket;
      readonly filter: Readonly<Record<string, unknown>>;
      readonly update: BucketUpdateDocument;
    };

/**
 * Decide how a compressed commit is sent.
 *
 * @param form - the storage's `openBucketForm`.
 * @param held - the bucket as held as version 1 on the server, if it is.
 * @param commit - the commit.
 * @param spliced - for a bucket held compressed: the commit spliced onto its stored columns, or
 *   `undefined` when they do not hold what the commit expects.
 * @returns the plan.
 */
export function planCompressedCommit(
  form: OpenBucketForm,
  held: HeldBucket | undefined,
  commit: CompressedBucketCommit,
  spliced: SplicedCommit | undefined,
): CompressedCommitPlan {
  const rows = commit.rows;
  if (held !== undefined) {
    // Cells need the measurements; a commit built without them expects a compressed document.
    if (rows === undefined || held.count !== commit.numPreviouslyCommittedMeasurements) return kSkipped;
    return cellsPlan(commit, rows, held);
  }
  if (spliced === undefined) return kSkipped;
  const minMax = { min: commit.minMax.min, max: commit.minMax.max };
  let replaced = 0;
  for (const [field, binary] of spliced.changed) replaced += binary.position + field.length + 8;
  let excess = spliced.excess;
  if (form !== 'compressed' && rows !== undefined && convertible(spliced, rows)) {
    let cells = 0;
    for (let i = 0; i < rows.measurements.length; i++) {
      cells += rowCellBytes(rows, i, commit.numPreviouslyCommittedMeasurements + i);
    }
    excess += Math.max(0, replaced - cells);
    // What the rewrite sends: about the commit's cells per measurement, for every measurement.
    const rewrite = (cells / rows.measurements.length) * commit.count;
    if (form === 'uncompressed' || excess >= rewrite) return convertedPlan(commit, spliced, minMax);
  }
  const update = compressedCommitReplacementUpdate(
    commit,
    spliced.changed,
    minMaxPaths(spliced.minMax, minMax),
  );
  return { kind: 'columns', commit, spliced, minMax, excess, filter: compressedCommitGuard(commit), update };
}

/**
 * Whether a stored bucket holds what a plan sends (read back after a lost reply or a short match count).
 *
 * @param stored - the bucket as read back.
 * @param plan - a plan that was sent.
 * @returns whether it is applied.
 */
export function compressedPlanApplied(stored: StoredBucket, plan: CompressedCommitPlan): boolean {
  switch (plan.kind) {
    case 'skipped':
      return false;
    case 'columns':
    case 'converted':
      // Either way the commit's measurements are the ones its columns gained.
      return compressedCommitAlreadyApplied(stored, plan.commit, plan.spliced.changed);
    case 'cells':
      return updateAlreadyApplied(stored, plan.update);
    default: {
      const never: never = plan;
      throw new TypeError(`unknown plan ${String(never)}`);
    }
  }
}

/** Where `MongoStorage` keeps what it knows of the compressed buckets it appends to. */
export interface OpenBucketState {
  /** The columns of buckets held compressed. */
  readonly columns: CompressedColumnCache;
  /** The buckets held as version 1. */
  readonly uncompressed: UncompressedOpenBuckets;
}

/**
 * Record what a sent plan's outcome says the server now holds.
 *
 * @param state - the storage's knowledge of its buckets.
 * @param ns - namespace.
 * @param plan - the plan sent.
 * @param applied - whether it was applied.
 */
export function recordCompressedOutcome(
  state: OpenBucketState,
  ns: string,
  plan: Exclude<CompressedCommitPlan, { kind: 'skipped' }>,
  applied: boolean,
): void {
  const id = plan.commit.bucketId;
  switch (plan.kind) {
    case 'columns':
      if (applied) {
        const { changed, base } = plan.spliced;
        state.columns.applied(ns, plan.commit, changed, base, plan.minMax, plan.excess);
      } else state.columns.forget(ns, id);
      return;
    case 'converted':
      // Its columns are read again (and compressed) when it closes.
      state.columns.forget(ns, id);
      if (applied) state.uncompressed.hold(ns, id, plan.held);
      return;
    case 'cells':
      if (applied) state.uncompressed.hold(ns, id, plan.held);
      else state.uncompressed.forget(ns, id);
      return;
    default: {
      const never: never = plan;
      throw new TypeError(`unknown plan ${String(never)}`);
    }
  }
}

const kSkipped: CompressedCommitPlan = Object.freeze({ kind: 'skipped' });

/**
 * Whether the bucket can be held as version 1: every column (and the time field, whose column's indices
 * guard the commits) can be written as a dotted path, so that each commit is a plain `$set` of cells.
 */
function convertible(spliced: SplicedCommit, rows: CommitRows): boolean {
  if (!isPathSafeFieldName(rows.timeField)) return false;
  for (const field of spliced.base.keys()) if (!isPathSafeFieldName(field)) return false;
  for (const field of spliced.changed.keys()) if (!isPathSafeFieldName(field)) return false;
  return true;
}

/**
 * About the bytes a measurement costs as cells: its BSON size without the metaField, each field's path
 * (`data.<field>.<index>`) longer than its name by `data.`, a dot and the index.
 */
function rowCellBytes(rows: CommitRows, i: number, index: number): number {
  const row = rows.measurements[i] as Readonly<Record<string, unknown>>;
  let size = calculateObjectSize(row);
  let fields = Object.keys(row).length;
  const { metaField } = rows;
  if (metaField !== undefined && hasOwnField(row, metaField)) {
    const meta: Record<string, unknown> = {};
    defineField(meta, metaField, getOwnField(row, metaField));
    size -= calculateObjectSize(meta) - 5;
    fields--;
  }
  return size + fields * (6 + String(index).length);
}

/** The commit's measurements as cells of the bucket held as version 1 (the 5.x–7.x commit). */
function cellsPlan(commit: CompressedBucketCommit, rows: CommitRows, held: HeldBucket): CompressedCommitPlan {
  const minMax = { min: commit.minMax.min, max: commit.minMax.max };
  const ops = minMaxSetOps(held.minMax, minMax);
  const update = makeBucketUpdate({
    measurements: rows.measurements,
    numPreviouslyCommittedMeasurements: commit.numPreviouslyCommittedMeasurements,
    existingColumns: held.columns,
    minUpdates: ops.min,
    maxUpdates: ops.max,
    metaField: rows.metaField,
  });
  const v1: BucketCommit = {
    bucketId: commit.bucketId,
    ...(commit.series === undefined ? {} : { series: commit.series }),
    timeField: rows.timeField,
    numPreviouslyCommittedMeasurements: commit.numPreviouslyCommittedMeasurements,
    update,
  };
  const columns =
    update.newColumns.length === 0 ? held.columns : new Set([...held.columns, ...update.newColumns]);
  return {
    kind: 'cells',
    commit,
    held: { count: commit.count, columns, minMax },
    filter: commitGuardFilter(v1),
    update: bucketUpdateDocument(update),
  };
}

/**
 * The bucket rewritten as version 1 with the commit's measurements: `data` set whole (every column
 * decoded, spliced ones as the commit leaves them), `control.version` 1, `control.count` removed,
 * guarded as the compressed commit is.
 */
function convertedPlan(
  commit: CompressedBucketCommit,
  spliced: SplicedCommit,
  minMax: StoredMinMax,
): CompressedCommitPlan {
  const data: Record<string, unknown> = {};
  const column = (field: string, bytes: Uint8Array) => {
    const values = decodeColumn(bytes, { maxCount: commit.count });
    const cells: Record<string, unknown> = {};
    for (let i = 0; i < values.length; i++)
      if (values[i] !== undefined) defineField(cells, String(i), values[i]);
    defineField(data, field, cells);
  };
  // The stored columns in their order, then the new ones: the document's order of fields.
  for (const [field, bytes] of spliced.base) {
    const changed = spliced.changed.get(field);
    column(field, changed === undefined ? bytes : binaryBytes(changed));
  }
  for (const [field, binary] of spliced.changed)
    if (!spliced.base.has(field)) column(field, binaryBytes(binary));
  const $set: Record<string, unknown> = { 'control.version': 1 };
  for (const [path, value] of minMaxPaths(spliced.minMax, minMax)) $set[path] = value;
  $set.data = data;
  return {
    kind: 'converted',
    commit,
    spliced,
    held: { count: commit.count, columns: new Set(Object.keys(data)), minMax },
    filter: compressedCommitGuard(commit),
    update: { $set, $unset: { 'control.count': '' } },
  };
}
