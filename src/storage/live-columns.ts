/**
 * How `MemoryStorage` keeps the compressed buckets the catalog is appending to: each column in a growable
 * buffer that a commit splices its bytes into (cost proportional to the bytes appended), and the bucket
 * document rebuilt only when someone reads it.
 *
 * A document handed to a reader shares its columns' buffers (no copy); the next commit to such a column
 * copies it first (copy on write), so a document once read never changes under its reader.
 *
 * @packageDocumentation
 */
import { Binary } from 'bson';

import type { CompressedBucketCommit } from '../bucket-format/compressed-bucket.js';
import { MinMaxSnapshot } from '../bucket-format/min-max-snapshot.js';
import { defineField, getOwnField } from '../util/safe-record.js';
import type { StoredBucket } from './storage.js';

/**
 * A compressed bucket being appended to. Column `i` is named `names[i]` and its bytes are
 * `bufs[i][0, lengths[i])`: parallel arrays rather than an object per column, so that a commit reads
 * a few contiguous arrays (a bulk load touches thousands of buckets between two commits to one).
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
  readonly names: string[];
  readonly bufs: Uint8Array[];
  readonly lengths: number[];
  /**
   * Per column, whether a materialised document views its buffer (the next write copies it first);
   * `undefined` when none does (the usual state between two reads), so that commits do not look.
   */
  shared: boolean[] | undefined;
}

/** The live compressed buckets of one namespace. */
export class LiveColumns {
  readonly #buckets = new Map<string, LiveBucket>();
  /** Buckets changed since their document was last built. */
  readonly #dirty = new Set<string>();

  /**
   * Whether {@link LiveColumns.apply} would apply a compressed commit (nothing is changed).
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
    let live = this.#buckets.get(key);
    if (live === undefined) {
      const doc = docs.get(key);
      live = doc === undefined ? undefined : liveBucketOf(doc);
      if (live === undefined) return undefined;
      this.#buckets.set(key, live);
    }
    if (live.count !== commit.numPreviouslyCommittedMeasurements) return undefined;
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
    const { fields, count, firstCreated, layout, layoutStart, bytes } = commit.tails;
    const { bufs, lengths, shared } = live;
    let start = commit.tails.bytesStart;
    for (let i = 0; i < count; i++) {
      const offset = layout[layoutStart + 2 * i] as number;
      const tailEnd = layout[layoutStart + 2 * i + 1] as number;
      const end = offset + tailEnd - start;
      let at: number;
      let buf: Uint8Array;
      if (i < firstCreated) {
        at = positionOf(live, fields[i] as string, i);
        buf = bufs[at] as Uint8Array;
        if (end > buf.length || shared?.[at] === true) {
          // Doubling keeps the copies per column logarithmic in its size.
          const grown = new Uint8Array(Math.max(buf.length, end * 2));
          grown.set(buf.subarray(0, offset));
          buf = grown;
          bufs[at] = buf;
          if (shared !== undefined) shared[at] = false;
        }
      } else {
        // A new column (rare): appended, or replacing one of the same name.
        const field = fields[i] as string;
        buf = new Uint8Array(Math.max(64, end * 2));
        at = live.names.indexOf(field);
        if (at < 0) {
          at = live.names.length;
          live.names.push(field);
          bufs.push(buf);
          lengths.push(0);
          shared?.push(false);
        } else {
          bufs[at] = buf;
          if (shared !== undefined) shared[at] = false;
        }
      }
      // A tail is mostly a dozen bytes: a loop beats `set`, whose call costs more than the copy.
      if (tailEnd - start > 64) buf.set(bytes.subarray(start, tailEnd), offset);
      else for (let j = start, o = offset; j < tailEnd; j++, o++) buf[o] = bytes[j] as number;
      lengths[at] = end;
      start = tailEnd;
    }
    // Once every column was copied, commits stop looking.
    if (shared?.includes(true) === false) live.shared = undefined;
    live.count = commit.count;
    if (commit.version !== undefined) live.version = commit.version;
    live.minMax = commit.minMax;
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
      docs.set(key, documentOf(base, live));
    }
    this.#dirty.clear();
  }

  /**
   * Forget a bucket (a write that is not a commit changed or removed its document).
   *
   * @param key - the bucket's key; every bucket when absent.
   */
  forget(key?: string): void {
    if (key === undefined) {
      this.#buckets.clear();
      this.#dirty.clear();
      return;
    }
    this.#buckets.delete(key);
    this.#dirty.delete(key);
  }
}

/** The live form of a stored compressed document (its columns copied once), or `undefined`. */
function liveBucketOf(doc: StoredBucket): LiveBucket | undefined {
  const control = getOwnField(doc, 'control') as Record<string, unknown> | undefined;
  const data = getOwnField(doc, 'data') as Record<string, unknown> | undefined;
  if (control === undefined || data === undefined) return undefined;
  if (control.version !== 2 && control.version !== 3) return undefined;
  const names: string[] = [];
  const bufs: Uint8Array[] = [];
  const lengths: number[] = [];
  for (const field of Object.keys(data)) {
    const value = data[field] as { _bsontype?: unknown; buffer: Uint8Array; position: number };
    if (value._bsontype !== 'Binary') return undefined;
    const bytes = value.buffer.subarray(0, value.position);
    const buf = new Uint8Array(Math.max(64, bytes.length * 2));
    buf.set(bytes);
    names.push(field);
    bufs.push(buf);
    lengths.push(bytes.length);
  }
  return {
    count: Number(control.count),
    version: control.version,
    minMax: MinMaxSnapshot.ofDocuments(
      control.min as Readonly<Record<string, unknown>>,
      control.max as Readonly<Record<string, unknown>>,
    ),
    names,
    bufs,
    lengths,
    shared: undefined,
  };
}

/** Where column `field`, column `i` of a commit, is in `live` (-1: absent). */
function positionOf(live: LiveBucket, field: string, i: number): number {
  return live.names[i] === field ? i : live.names.indexOf(field);
}

/** A new document: `base` with the live control fields and columns (viewing the live buffers). */
function documentOf(base: StoredBucket, live: LiveBucket): StoredBucket {
  const doc: StoredBucket = {};
  for (const field of Object.keys(base)) {
    if (field === 'control') {
      const control = base.control as Record<string, unknown>;
      const next: Record<string, unknown> = {};
      for (const name of Object.keys(control)) {
        if (name === 'version') next.version = live.version;
        else if (name === 'min') next.min = live.minMax.min;
        else if (name === 'max') next.max = live.minMax.max;
        else if (name === 'count') next.count = live.count;
        else defineField(next, name, control[name]);
      }
      doc.control = next;
    } else if (field === 'data') {
      const data: Record<string, unknown> = {};
      const n = live.names.length;
      // Every column is viewed by the document now: the next commit to each copies it first.
      live.shared = new Array<boolean>(n).fill(true);
      for (let i = 0; i < n; i++) {
        const buf = (live.bufs[i] as Uint8Array).subarray(0, live.lengths[i]);
        defineField(data, live.names[i] as string, new Binary(buf, Binary.SUBTYPE_COLUMN));
      }
      doc.data = data;
    } else defineField(doc, field, base[field]);
  }
  return doc;
}
