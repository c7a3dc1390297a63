/**
 * The BSONColumn encoder (the server's `BSONColumnBuilder`): regular mode with one {@link EncodingState},
 * and interleaved mode for objects and arrays with scalar leaves (BSONCOLUMN.md §1.6).
 *
 * Modes:
 *
 * | mode | on object with leaves | on scalar | on missing |
 * |---|---|---|---|
 * | regular | flush, start determining | append | skip |
 * | determining | merge into reference and buffer, or fix the reference and append | end section, append | buffer a skip (end section first if the reference has an empty sub-object) |
 * | appending | append to streams, or end section and start determining | end section, append | skip every stream (same exception) |
 *
 * @packageDocumentation
 */
import { InternalInvariantError } from '../../errors.js';
import { BsonType, kInterleavedStartArray, kInterleavedStartObject } from './bsoncolumn-util.js';
import { isInt32Number } from '../../util/bson-value.js';
import { ElementWriter } from './bson-element.js';
import { ByteWriter } from './byte-writer.js';
import { EncodingState } from './encoding-state.js';
import type { RefField, RefObject } from './interleaved-reference.js';
import {
  countLeaves,
  hasEmptyObject,
  lockStep,
  mergeRefObject,
  parseRefObject,
  writeRefObject,
} from './interleaved-reference.js';

const Mode = { regular: 0, determining: 1, appending: 2 } as const;
type Mode = (typeof Mode)[keyof typeof Mode];

/** One leaf stream of an interleaved section: its own buffer and its finished items. */
interface SubStream {
  readonly out: ByteWriter;
  /** Flat `[start, end, entries]` triples. */
  readonly items: number[];
  readonly state: EncodingState;
}

/**
 * Encodes a sequence of values into one BSONColumn binary: append, then {@link finalize}, which leaves the
 * builder empty and ready for the next column.
 */
export class BSONColumnBuilder {
  readonly #out = new ByteWriter();
  readonly #element = new ElementWriter();
  // Reset rather than replaced between sections and columns: a new state allocates its tables.
  readonly #regular = new EncodingState(this.#out);
  #mode: Mode = Mode.regular;
  #reference: RefObject = { isArray: false, fields: [] };
  #referenceType = 0;
  // Objects buffered while the reference is determined; `undefined` is a buffered missing entry.
  #buffered: Array<RefObject | undefined> = [];
  #streams: SubStream[] = [];
  readonly #leaves: Array<RefField | undefined> = [];

  /**
   * Append one entry.
   *
   * @param value - a value, or `undefined` for a missing entry.
   * @throws TimeseriesError when the value has no BSON representation.
   */
  append(value: unknown): void {
    // Numbers and dates outside interleaved sections go to the state as numbers: writing their BSON bytes
    // only for the state to read them back was a good part of the cost of a value.
    if (this.#mode === Mode.regular) {
      if (typeof value === 'number') {
        if (isInt32Number(value)) this.#regular.appendInt32(value);
        else this.#regular.appendDouble(value);
        return;
      }
      if (value instanceof Date) {
        this.#regular.appendDate(value.getTime());
        return;
      }
    }
    if (value === undefined) {
      this.skip();
      return;
    }
    const el = this.#element;
    el.write(value);
    if (el.type === BsonType.object || el.type === BsonType.array) {
      this.#appendObject(el.type, parseRefObject(el.bytes, el.start, el.type === BsonType.array));
      return;
    }
    if (this.#mode !== Mode.regular) this.#flushSubObjMode();
    this.#regular.append(el.type, el.bytes, el.start, el.end);
  }

  /** Append a missing entry. */
  skip(): void {
    if (this.#mode === Mode.regular) {
      this.#regular.skip();
      return;
    }
    // Skipping in every stream would still write the reference's empty sub-objects: end the section.
    if (hasEmptyObject(this.#reference)) {
      this.#flushSubObjMode();
      this.#regular.skip();
      return;
    }
    if (this.#mode === Mode.determining) this.#buffered.push(undefined);
    else for (const s of this.#streams) s.state.skip();
  }

  /**
   * Finish the column and empty the builder, so that it can encode another column.
   *
   * @returns the BSONColumn binary (the BinData subtype 7 payload).
   */
  finalize(): Uint8Array {
    if (this.#mode === Mode.regular) this.#regular.flush();
    else this.#flushSubObjMode();
    this.#out.u8(0);
    const bytes = this.#out.toBytes();
    this.#out.reset();
    this.#regular.reset();
    return bytes;
  }

  #appendObject(type: number, obj: RefObject): void {
    const numElements = countLeaves(obj);
    const el = this.#element;
    if (this.#mode === Mode.regular) {
      if (numElements === 0) this.#regular.append(type, el.bytes, el.start, el.end);
      else this.#startDetermining(obj, type);
      return;
    }
    if (type !== this.#referenceType) {
      this.#flushSubObjMode();
      if (numElements === 0) this.#regular.append(type, el.bytes, el.start, el.end);
      else this.#startDetermining(obj, type);
      return;
    }
    if (this.#mode === Mode.determining) {
      const leaves = this.#leaves;
      leaves.length = 0;
      if (!lockStep(this.#reference, obj, leaves)) {
        const merged = mergeRefObject(this.#reference, obj);
        if (merged === undefined || obj.fields.length === 0) {
          this.#flushSubObjMode();
          if (numElements === 0) {
            this.#regular.append(type, el.bytes, el.start, el.end);
          } else {
            this.#startDetermining(obj, type);
          }
          return;
        }
        this.#reference = merged;
      }
      // Buffer up to twice as many objects as the reference has leaves, then fix the reference.
      if (leaves.length * 2 >= this.#buffered.length) {
        this.#buffered.push(obj);
        return;
      }
      this.#finishDetermining();
    }
    if (!this.#appendSubElements(obj)) {
      if (numElements === 0) this.#regular.append(type, el.bytes, el.start, el.end);
      else this.#startDetermining(obj, type);
    }
  }

  #startDetermining(obj: RefObject, type: number): void {
    this.#regular.flush();
    // Left untouched until the section ends, when the next regular values start from a fresh state.
    this.#regular.reset();
    this.#reference = obj;
    this.#referenceType = type;
    this.#buffered = [obj];
    this.#mode = Mode.determining;
  }

  /** Append an object to the streams; on incompatibility end the section and return `false`. */
  #appendSubElements(obj: RefObject | undefined): boolean {
    const streams = this.#streams;
    if (obj === undefined) {
      for (const s of streams) s.state.skip();
      return true;
    }
    const leaves = this.#leaves;
    leaves.length = 0;
    if (!lockStep(this.#reference, obj, leaves)) {
      this.#flushSubObjMode();
      return false;
    }
    if (leaves.length !== streams.length)
      throw new InternalInvariantError(7101, 'leaf count differs from streams');
    for (const [i, { state }] of streams.entries()) {
      const f = leaves[i];
      if (f === undefined) state.skip();
      else state.append(f.type, f.bytes, f.start, f.end);
    }
    return true;
  }

  #finishDetermining(): void {
    const out = this.#out;
    out.u8(this.#referenceType === BsonType.array ? kInterleavedStartArray : kInterleavedStartObject);
    writeRefObject(this.#reference, out);
    const refLeaves: RefField[] = [];
    collectLeaves(this.#reference, refLeaves);
    const first = this.#buffered[0];
    const firstLeaves: Array<RefField | undefined> = [];
    if (first === undefined || !lockStep(this.#reference, first, firstLeaves)) {
      throw new InternalInvariantError(7102, 'first buffered object incompatible with its reference');
    }
    this.#streams = refLeaves.map((ref, i) => {
      const streamOut = new ByteWriter(64);
      const items: number[] = [];
      const state = new EncodingState(streamOut, items);
      // The reference holds the first value: streams start as if it was their literal (§1.6 step 3).
      state.initializeFrom(ref.type, ref.bytes, ref.start, ref.end);
      const f = firstLeaves[i];
      if (f === undefined) state.skip();
      else state.append(f.type, f.bytes, f.start, f.end);
      return { out: streamOut, items, state };
    });
    this.#mode = Mode.appending;
    for (let i = 1; i < this.#buffered.length; i++) {
      if (!this.#appendSubElements(this.#buffered[i])) {
        throw new InternalInvariantError(7103, 'buffered object incompatible with the merged reference');
      }
    }
    this.#buffered = [];
  }

  #flushSubObjMode(): void {
    if (this.#mode === Mode.determining) this.#finishDetermining();
    const streams = this.#streams;
    for (const s of streams) s.state.flush();
    writeInDecoderOrder(streams, this.#out);
    this.#out.u8(0);
    this.#streams = [];
    this.#mode = Mode.regular;
  }
}

function collectLeaves(obj: RefObject, out: RefField[]): void {
  for (const f of obj.fields) {
    if (f.sub === undefined) out.push(f);
    else collectLeaves(f.sub, out);
  }
}

/**
 * Lay out the streams' items in the order the decoder asks for them: always the stream that has
 * produced the fewest entries so far, the lower stream index on ties (§1.6 step 6). A binary min-heap
 * keyed by `entries * 2^20 + index`.
 */
function writeInDecoderOrder(streams: ReadonlyArray<SubStream>, out: ByteWriter): void {
  const n = streams.length;
  const heap: number[] = [];
  const next = new Uint32Array(n);
  const kIndexSpace = 1 << 20;
  const push = (key: number): void => {
    let i = heap.length;
    heap.push(key);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((heap[parent] ?? 0) <= key) break;
      heap[i] = heap[parent] ?? 0;
      i = parent;
    }
    heap[i] = key;
  };
  const pop = (): number => {
    const top = heap[0] ?? 0;
    const last = heap.pop() ?? 0;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= heap.length) break;
        const r = l + 1;
        const c = r < heap.length && (heap[r] ?? 0) < (heap[l] ?? 0) ? r : l;
        if ((heap[c] ?? 0) >= last) break;
        heap[i] = heap[c] ?? 0;
        i = c;
      }
      heap[i] = last;
    }
    return top;
  };
  for (const [i, s] of streams.entries()) if (s.items.length > 0) push(i);
  while (heap.length > 0) {
    const key = pop();
    const index = key % kIndexSpace;
    const entriesSoFar = (key - index) / kIndexSpace;
    const s = streams[index];
    if (s === undefined) throw new InternalInvariantError(7104, 'heap holds an unknown stream');
    const k = next[index] ?? 0;
    const start = s.items[k] ?? 0;
    const end = s.items[k + 1] ?? 0;
    const entries = s.items[k + 2] ?? 0;
    out.bytes(s.out.buf, start, end);
    next[index] = k + 3;
    if (k + 3 < s.items.length) push((entriesSoFar + entries) * kIndexSpace + index);
  }
}
