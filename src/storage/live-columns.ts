/**
 * How `MemoryStorage` keeps the compressed buckets the catalog is appending to: each bucket's columns in
 * one growable buffer, a region per column, that a commit splices its bytes into (cost proportional to
 * the bytes appended), and the bucket document rebuilt only when someone reads it. A commit with deferred
 * columns brings no bytes: the bucket records the catalog's map as its source and takes the tails from it
 * when 16 measurements wait or the bucket is read (see `MeasurementMap`).
 *
 * A reader (`find`) gets a document built for it, owning its bytes and values, which the storage does not
 * keep (`readerDocument`). A document the storage keeps for its own reads (`materialize`: guards, updates,
 * deletes) shares the bucket's buffer; the next commit copies the buffer first (copy on write), so such a
 * document never changes under whoever reads it.
 *
 * @packageDocumentation
 */
import { Binary } from 'bson';

import { isClosedBucket, seriesMatchesDocument } from '../bucket-format/bucket-document.js';
import type { ColumnPreview, ColumnTails, DeferredColumns } from '../bucket-format/column-tails.js';
import type { CompressedBucketCommit, DeferredFirstCommit } from '../bucket-format/compressed-bucket.js';
import { MinMaxSnapshot } from '../bucket-format/min-max-snapshot.js';
import { bufferView, cloneBsonValue, copyBytes } from '../util/bson-value.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import type { StoredBucket } from './storage.js';

/**
 * A compressed bucket being appended to. Column `i` is named `names[i]`; its bytes are
 * `arena[starts[i], starts[i] + lengths[i])`, in a region of `caps[i]` bytes. One buffer and a few
 * arrays of numbers per bucket, rather than an object and a buffer per column: a bulk load touches
 * thousands of buckets between two commits to one, and every column a commit writes to was another
 * cache miss.
 */
interface LiveBucket {
  /** `control.count`. */
  count: number;
  /** `control.version`. */
  version: unknown;
  /**
   * `control.min` and `control.max`: the last commit's snapshot (its documents are built when the bucket
   * is read), or the stored document's.
   */
  minMax: MinMaxSnapshot;
  /**
   * Column names in document order. A commit lists its columns in the bucket's column order too, so
   * column `i` of a commit is found by comparing one name; only a bucket whose stored order differs
   * (integer-like field names, which JS objects list first) searches.
   */
  names: string[];
  /** Every column's bytes. */
  arena: Uint8Array;
  starts: number[];
  caps: number[];
  lengths: number[];
  /** Whether a materialised document views `arena` (the next commit copies it first). */
  shared: boolean;
  /**
   * Where the bytes of the measurements after those in `arena` are (the catalog's encoders, deferred):
   * taken up to `count` when the bucket is read, or when a commit leaves enough of them waiting.
   */
  source: DeferredColumns | undefined;
}

/** The live compressed buckets of one namespace. */
export class LiveColumns {
  readonly #buckets = new Map<string, LiveBucket>();
  /** Buckets changed since their document was last built. */
  readonly #dirty = new Set<string>();
  /**
   * The catalog encoders whose bucket was written otherwise since they last committed to it (see
   * {@link LiveColumns.forget}): their view of the columns is no longer what is stored, even when the
   * count still is (a rewrite of the same measurements' values), so their commits do not apply.
   */
  readonly #detached = new WeakSet<DeferredColumns>();

  /**
   * Whether {@link LiveColumns.apply} would apply a compressed commit (nothing stored is changed).
   *
   * @param key - the bucket's key in `docs`.
   * @param docs - the namespace's documents.
   * @param commit - the commit.
   * @returns whether the guard holds.
   */
  matches(key: string, docs: ReadonlyMap<string, StoredBucket>, commit: CompressedBucketCommit): boolean {
    return this.#matching(key, docs, commit) !== undefined;
  }

  /** The bucket's live copy (made from its document on first use) if the commit's guard holds. */
  #matching(
    key: string,
    docs: ReadonlyMap<string, StoredBucket>,
    commit: CompressedBucketCommit,
  ): LiveBucket | undefined {
    if (commit.deferred !== undefined && this.#detached.has(commit.deferred)) return undefined;
    let live = this.#buckets.get(key);
    if (live === undefined) {
      // No live columns: the bucket was written otherwise since its last commit (or never committed to
      // here): it may have been rewritten and marked closed (a delete of some of its measurements by
      // another catalog), or its meta changed (an update of the metaField): then the commit does not
      // apply. Live columns are dropped by every such write, so while they exist the meta is the one
      // checked here, or the inserting catalog's.
      const doc = docs.get(key);
      if (
        doc === undefined ||
        isClosedBucket(doc) ||
        (commit.series !== undefined && !seriesMatchesDocument(doc, commit.series))
      ) {
        return undefined;
      }
      live = liveBucketOf(doc);
      if (live === undefined) return undefined;
      this.#buckets.set(key, live);
    }
    if (live.count !== commit.numPreviouslyCommittedMeasurements) return undefined;
    if (commit.storedVersion !== undefined && live.version !== commit.storedVersion) return undefined;
    // A commit of another source (another catalog, or a bucket reopened by a new map) is checked against
    // the columns readers saw: the ones this bucket's source holds are taken first (a read may have shown
    // them without taking them, see readDocument).
    if (live.source !== undefined && live.source !== commit.deferred) {
      take(live);
      live.source = undefined;
    }
    // Check every column before changing any: a commit applies whole or not at all.
    const { fields, firstCreated, layout, layoutStart } = commit.tails;
    for (let i = 0; i < firstCreated; i++) {
      const at = positionOf(live, fields[i] as string, i);
      if (at < 0 || (live.lengths[at] as number) < (layout[layoutStart + 2 * i] as number)) return undefined;
    }
    return live;
  }

  /**
   * Apply a compressed commit if the bucket holds exactly the measurements it expects.
   *
   * @param key - the bucket's key in `docs`.
   * @param docs - the namespace's documents (the bucket's document starts the live copy).
   * @param commit - the commit.
   * @returns whether the guard held and the commit was applied.
   */
  apply(key: string, docs: ReadonlyMap<string, StoredBucket>, commit: CompressedBucketCommit): boolean {
    const live = this.#matching(key, docs, commit);
    if (live === undefined) return false;
    const deferred = commit.deferred;
    if (deferred === undefined) applyTails(live, commit.tails);
    else live.source = deferred;
    live.count = commit.count;
    // Enough measurements kept: encoded now, while the storage holds every one of them.
    if (deferred?.shouldDrain() === true) take(live);
    if (commit.version !== undefined) live.version = commit.version;
    live.minMax = MinMaxSnapshot.kept(commit.minMax, live.minMax);
    this.#dirty.add(key);
    return true;
  }

  /**
   * Rebuild the documents of the buckets changed since they were last read.
   *
   * @param docs - the namespace's documents, updated in place (new document objects).
   */
  materialize(docs: Map<string, StoredBucket>): void {
    if (this.#dirty.size === 0) return;
    for (const key of this.#dirty) {
      const live = this.#buckets.get(key);
      const base = docs.get(key);
      if (live === undefined || base === undefined) continue;
      docs.set(key, readDocument(base, live, 'storage'));
    }
    this.#dirty.clear();
  }

  /**
   * Rebuild one bucket's document if it changed since it was last read: a read that touches a few buckets
   * (a reopening query for one series, a fetch by `_id`) takes only their columns.
   *
   * @param key - the bucket's key.
   * @param docs - the namespace's documents, updated in place.
   */
  materializeOne(key: string, docs: Map<string, StoredBucket>): void {
    if (!this.#dirty.delete(key)) return;
    const live = this.#buckets.get(key);
    const base = docs.get(key);
    if (live === undefined || base === undefined) return;
    docs.set(key, readDocument(base, live, 'storage'));
  }

  /**
   * The document of a bucket changed since its document was last built, for a reader who may keep and
   * change it: built from the live bucket as a read builds it, but sharing nothing with what the storage
   * holds (its columns copied out of the bucket's buffer, or previewed into new bytes; its other values
   * copied), and not kept: the namespace goes on holding what it held, and the bucket stays changed.
   *
   * @param key - the bucket's key.
   * @param docs - the namespace's documents (not changed).
   * @returns the document, or `undefined` when the stored document is current (or there is none).
   */
  readerDocument(key: string, docs: ReadonlyMap<string, StoredBucket>): StoredBucket | undefined {
    if (!this.#dirty.has(key)) return undefined;
    const live = this.#buckets.get(key);
    const base = docs.get(key);
    if (live === undefined || base === undefined) return undefined;
    return readDocument(base, live, 'reader');
  }

  /**
   * Keep a first commit's document whose columns and min/max come aside (its `data` is empty, its
   * `control.min` and `control.max` are `null`): the document is built when read.
   *
   * @param key - the bucket's key in the namespace's documents.
   * @param doc - the stored document (version 2, `control.count` set).
   * @param first - where the columns are, and the min/max.
   * @returns what the namespace keeps as the bucket's document until it is read: `doc` without the
   *   values the live bucket holds (see {@link skeletonOf}).
   */
  adopt(key: string, doc: StoredBucket, first: DeferredFirstCommit): StoredBucket {
    const control = doc.control as Record<string, unknown>;
    const live: LiveBucket = {
      count: Number(control.count),
      version: control.version,
      minMax: MinMaxSnapshot.kept(first.minMax, undefined),
      // No columns until the storage first takes some (a bucket read only through previews never does):
      // shared empty arrays until then (withColumnArrays).
      names: kNoNames,
      arena: kEmpty,
      starts: kNoNumbers,
      caps: kNoNumbers,
      lengths: kNoNumbers,
      shared: false,
      source: first.columns,
    };
    this.#buckets.set(key, live);
    this.#dirty.add(key);
    if (first.columns.shouldDrain()) take(live);
    return skeletonOf(doc);
  }

  /**
   * Forget a bucket (a write that is not a commit changed or removed its document).
   *
   * @param key - the bucket's key; every bucket when absent.
   */
  forget(key?: string): void {
    if (key === undefined) {
      for (const live of this.#buckets.values()) this.#detach(live);
      this.#buckets.clear();
      this.#dirty.clear();
      return;
    }
    const live = this.#buckets.get(key);
    if (live !== undefined) this.#detach(live);
    this.#buckets.delete(key);
    this.#dirty.delete(key);
  }

  /**
   * Refuse the later commits of the encoders that last committed to `live`: the write that forgets it may
   * have rewritten values without changing the count, which their next tails would overwrite again.
   */
  #detach(live: LiveBucket): void {
    if (live.source !== undefined) this.#detached.add(live.source);
  }
}

/**
 * A first commit's document as the namespace keeps it while its bucket is live and unread: its fields in
 * their order, but `control.version`, `min`, `max` and `count` as `null` and an empty `data`. Every read
 * rebuilds the document from the live bucket first (`materialize`), which takes only the field names
 * from it. Made in place: the storage owns the documents it is given.
 */
function skeletonOf(doc: StoredBucket): StoredBucket {
  const control = doc.control as Record<string, unknown>;
  // The catalog's control (its four fields in their order) is then one object shared by every skeleton,
  // as the empty data is: frozen, so that a write reaching one by mistake fails rather than changes all.
  if (hasSkeletonFields(control)) doc.control = kSkeletonControl;
  else {
    for (const name of kSkeletonControlFields) if (hasOwnField(control, name)) control[name] = null;
  }
  if (hasOwnField(doc, 'data')) doc.data = kNoData;
  return doc;
}

/** Whether `control`'s own fields are exactly {@link kSkeletonControl}'s, in its order (no array made). */
function hasSkeletonFields(control: Record<string, unknown>): boolean {
  let i = 0;
  for (const key in control) {
    if (!hasOwnField(control, key)) continue;
    if (key !== kSkeletonControlFields[i]) return false;
    i++;
  }
  return i === kSkeletonControlFields.length;
}

/** What {@link skeletonOf} leaves of a document's control values (shared by the catalog's skeletons). */
const kSkeletonControl = Object.freeze({
  version: null,
  min: null,
  max: null,
  count: null,
});
const kSkeletonControlFields: ReadonlyArray<string> = Object.keys(kSkeletonControl);
const kNoData: Readonly<Record<string, unknown>> = Object.freeze({});

/** The value itself: a stored document's fields, shared by the next document the storage keeps. */
const kSame = <T>(value: T): T => value;

/**
 * A new document with `base`'s fields in their order, but `control.version`, `min`, `max` and `count`
 * from `control` and `data` from `dataOf` (called when `base` has a `data` field); `base`'s other values
 * as `copy` gives them.
 */
function withControlAndData(
  base: StoredBucket,
  control: {
    readonly version: unknown;
    readonly min: unknown;
    readonly max: unknown;
    readonly count: unknown;
  },
  dataOf: () => Record<string, unknown>,
  copy: (value: unknown) => unknown,
): StoredBucket {
  const doc: StoredBucket = {};
  for (const field of Object.keys(base)) {
    if (field === 'control') {
      const stored = base.control as Record<string, unknown>;
      const next: Record<string, unknown> = {};
      for (const name of Object.keys(stored)) {
        if (name === 'version') next.version = control.version;
        else if (name === 'min') next.min = control.min;
        else if (name === 'max') next.max = control.max;
        else if (name === 'count') next.count = control.count;
        else defineField(next, name, copy(stored[name]));
      }
      doc.control = next;
    } else if (field === 'data') doc.data = dataOf();
    else defineField(doc, field, copy(base[field]));
  }
  return doc;
}

/** The live form of a stored compressed document (its columns copied once), or `undefined`. */
function liveBucketOf(doc: StoredBucket): LiveBucket | undefined {
  const control = getOwnField(doc, 'control') as Record<string, unknown> | undefined;
  const data = getOwnField(doc, 'data') as Record<string, unknown> | undefined;
  if (control === undefined || data === undefined) return undefined;
  if (control.version !== 2 && control.version !== 3) return undefined;
  const names: string[] = [];
  const columns: Uint8Array[] = [];
  for (const field of Object.keys(data)) {
    const value = data[field] as { _bsontype?: unknown; buffer: Uint8Array; position: number };
    if (value._bsontype !== 'Binary') return undefined;
    names.push(field);
    columns.push(value.buffer.subarray(0, value.position));
  }
  const live: LiveBucket = {
    count: Number(control.count),
    version: control.version,
    minMax: MinMaxSnapshot.ofDocuments(
      control.min as Readonly<Record<string, unknown>>,
      control.max as Readonly<Record<string, unknown>>,
    ),
    names,
    arena: kEmpty,
    starts: names.map(() => 0),
    caps: names.map(() => 0),
    lengths: columns.map((bytes) => bytes.length),
    shared: false,
    source: undefined,
  };
  // Regions sized for the columns' lengths (the empty buffer has nothing to copy), then filled.
  relayout(live);
  columns.forEach((bytes, i) => {
    live.arena.set(bytes, live.starts[i]);
  });
  return live;
}

const kEmpty = new Uint8Array(0);

/** The column arrays of a bucket the storage has taken no column of yet (frozen: never written). */
const kNoNames: string[] = Object.freeze([]) as unknown as string[];
const kNoNumbers: number[] = Object.freeze([]) as unknown as number[];

/** Give a bucket that has no column yet arrays of its own, before its first columns are added. */
function withColumnArrays(live: LiveBucket): void {
  live.names = [];
  live.starts = [];
  live.caps = [];
  live.lengths = [];
}

/** Take from the bucket's source what it holds up to the bucket's count. */
function take(live: LiveBucket): void {
  live.source?.takeTails(live.count, (tails) => {
    applyTails(live, tails);
  });
}

/** Per column of the tails being applied: its position in the bucket and its new length (reused). */
const tailAt: number[] = [];
const tailEnd: number[] = [];
/** Per column of the bucket: the bytes it must have room for (reused by {@link relayout}). */
const needs: number[] = [];

/** Splice each column's tail in (a new column is appended). */
function applyTails(live: LiveBucket, tails: ColumnTails): void {
  const { fields, count, firstCreated, layout, layoutStart, bytes } = tails;
  if (count === 0) return;
  if (live.names === kNoNames) withColumnArrays(live);
  const { caps, lengths } = live;
  // Where each tail goes and what it needs first: a bucket that must grow moves once, not once per column
  // (a first take creates every column).
  let grow = live.shared;
  let start = tails.bytesStart;
  for (let i = 0; i < count; i++) {
    const stop = layout[layoutStart + 2 * i + 1] as number;
    const end = (layout[layoutStart + 2 * i] as number) + stop - start;
    const at =
      i < firstCreated ? positionOf(live, fields[i] as string, i) : newColumn(live, fields[i] as string);
    tailAt[i] = at;
    tailEnd[i] = end;
    if (end > (caps[at] as number)) grow = true;
    start = stop;
  }
  if (grow) {
    needs.length = 0;
    for (let j = 0; j < lengths.length; j++) needs.push(lengths[j] as number);
    for (let i = 0; i < count; i++) {
      const at = tailAt[i] as number;
      needs[at] = Math.max(needs[at] as number, tailEnd[i] as number);
    }
    relayout(live, needs);
  }
  const arena = live.arena;
  const starts = live.starts;
  start = tails.bytesStart;
  for (let i = 0; i < count; i++) {
    const at = tailAt[i] as number;
    const end = tailEnd[i] as number;
    const stop = layout[layoutStart + 2 * i + 1] as number;
    const to = (starts[at] as number) + end - (stop - start);
    // A tail is mostly a dozen bytes: a loop beats `set`, whose call costs more than the copy. Its
    // indices typed as int32 (`| 0`): from fields and arrays of unknown type they were doubles, converted
    // at each byte.
    if (stop - start > 64) arena.set(bytes.subarray(start, stop), to);
    else for (let k = start | 0, o = to | 0; k < stop; k++, o++) arena[o] = bytes[k] as number;
    lengths[at] = end;
    start = stop;
  }
}

/**
 * Move the bucket's columns to a new buffer, each region twice what it must hold (at least 16 bytes):
 * `need[i]` bytes for column `i` when given, else its length. Doubling keeps the copies logarithmic in a
 * bucket's size.
 */
function relayout(live: LiveBucket, need?: ReadonlyArray<number>): void {
  const { starts, caps, lengths } = live;
  const sizes = need ?? lengths;
  const n = starts.length;
  let total = 0;
  for (let i = 0; i < n; i++) total += Math.max(kMinRegion, 2 * (sizes[i] as number));
  const arena = new Uint8Array(total);
  let next = 0;
  for (let i = 0; i < n; i++) {
    const from = starts[i] as number;
    arena.set(live.arena.subarray(from, from + (lengths[i] as number)), next);
    starts[i] = next;
    caps[i] = Math.max(kMinRegion, 2 * (sizes[i] as number));
    next += caps[i] as number;
  }
  live.arena = arena;
  live.shared = false;
}

/** Smallest region of a column. */
const kMinRegion = 16;

/** Add column `field` (rare: a commit's new column), or empty the one of that name; returns its position. */
function newColumn(live: LiveBucket, field: string): number {
  let at = live.names.indexOf(field);
  if (at < 0) {
    at = live.names.length;
    live.names.push(field);
    // An empty region: the column's first write moves the bucket to a buffer with room for it.
    live.starts.push(0);
    live.caps.push(0);
    live.lengths.push(0);
  } else live.lengths[at] = 0;
  return at;
}

/** Where column `field`, column `i` of a commit, is in `live` (-1: absent). */
function positionOf(live: LiveBucket, field: string, i: number): number {
  return live.names[i] === field ? i : live.names.indexOf(field);
}

/**
 * The document of a bucket being read: while the storage holds none of its columns and its source has
 * encoded none of its measurements (a bucket of a few measurements), the columns are previewed from the
 * source, which keeps no encoder for it (`DeferredColumns.previewColumns`); otherwise the storage takes
 * the tails. For the storage (`'storage'`: the namespace keeps it), the document views the bucket's
 * buffer and shares its other values with `base`; for a reader (`'reader'`), it owns everything.
 */
function readDocument(base: StoredBucket, live: LiveBucket, owner: 'storage' | 'reader'): StoredBucket {
  const preview = live.names.length === 0 ? live.source?.previewColumns(live.count) : undefined;
  const { version, count, minMax } = live;
  const reader = owner === 'reader';
  // A reader's min/max are new documents: the snapshot builds and keeps none (MinMaxSnapshot.kept).
  const control = reader
    ? { version, min: minMax.newMin(), max: minMax.newMax(), count }
    : { version, min: minMax.min, max: minMax.max, count };
  if (preview === undefined) take(live);
  return withControlAndData(
    base,
    control,
    () => (preview === undefined ? columnsOf(live, owner) : previewedColumns(preview, owner)),
    reader ? cloneBsonValue : kSame,
  );
}

/**
 * The columns a preview made, viewing one copy of its bytes (the preview's are a scratch): for a reader,
 * a copy from Node's buffer pool (the reader's document is short-lived); for the storage, which may keep
 * the document, an array of its own, so that no kept document holds a pool's 8 KiB alive.
 */
function previewedColumns(preview: ColumnPreview, owner: 'storage' | 'reader'): Record<string, unknown> {
  const length = preview.ends.length === 0 ? 0 : (preview.ends[preview.ends.length - 1] as number);
  const bytes = owner === 'reader' ? copyBytes(preview.bytes, 0, length) : preview.bytes.slice(0, length);
  const data: Record<string, unknown> = {};
  let start = 0;
  for (let i = 0; i < preview.ends.length; i++) {
    const end = preview.ends[i] as number;
    defineField(
      data,
      preview.names[i] as string,
      new Binary(bufferView(bytes, start, end), Binary.SUBTYPE_COLUMN),
    );
    start = end;
  }
  return data;
}

/**
 * The bucket's columns: views of its buffer for the storage (the next commit copies the buffer first),
 * copies for a reader.
 */
function columnsOf(live: LiveBucket, owner: 'storage' | 'reader'): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  if (owner === 'storage') live.shared = true;
  for (let i = 0; i < live.names.length; i++) {
    const from = live.starts[i] as number;
    const to = from + (live.lengths[i] as number);
    const bytes = owner === 'storage' ? bufferView(live.arena, from, to) : copyBytes(live.arena, from, to);
    defineField(data, live.names[i] as string, new Binary(bytes, Binary.SUBTYPE_COLUMN));
  }
  return data;
}
