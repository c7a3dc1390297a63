/**
 * The BSONColumn encoder (the server's `BSONColumnBuilder`): regular mode with one {@link EncodingState},
 * and interleaved mode for objects and arrays with scalar leaves (docs/bsoncolumn.md §1.6).
 *
 * Modes:
 *
 * | mode | on object with leaves | on scalar | on missing |
 * |---|---|---|---|
 * | regular | flush, start determining | append | skip |
 * | determining | merge into reference and buffer, or fix the reference and append | end section, append | buffer a skip (end section first if the reference has an empty sub-object) |
 * | appending | append to streams, or end section and start determining | end section, append | skip every stream (same exception) |
 *
 * Intermediate binaries (MongoDB 8): {@link BSONColumnBuilder.intermediate} writes what finalizing now
 * would write (in regular mode straight from the encoding state's pending values, otherwise from copies of
 * the encoding states), then takes it back out; the builder keeps only the
 * bytes that may still change (from the open Simple-8b control byte on, or nothing) and the offset where
 * they start in the column.
 *
 * @packageDocumentation
 */
import { Long } from 'bson';

import { InternalInvariantError } from '../../errors.js';
import type { BinaryDiff } from './binary-diff.js';
import { reopenPoint, resumeRegular64 } from './binary-reopen.js';
import {
  BsonType,
  kInterleavedStartArray,
  kInterleavedStartObject,
  scaleIndexForControlByte,
} from './bsoncolumn-util.js';
import { decodeColumn } from './decoder.js';
import { isInt32Number } from '../../util/bson-value.js';
import { ElementWriter } from './bson-element.js';
import { ByteWriter } from './byte-writer.js';
import { EncodingState } from './encoding-state.js';
import type { FlushTail } from './encoding-state.js';
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

const kNoStreams: SubStream[] = Object.freeze([]) as unknown as SubStream[];

const kNoReference: RefObject = Object.freeze({ isArray: false, fields: Object.freeze([]) });
// Frozen: a push to them would be a bug, and throws.
const kNothingBuffered: Array<RefObject | undefined> = Object.freeze([]) as unknown as Array<
  RefObject | undefined
>;

const kBsonVersion = Symbol.for('@@mdb.bson.version');
const kCurrentBsonVersion: unknown = (Long.ZERO as unknown as Record<symbol, unknown>)[kBsonVersion];

/**
 * Whether `value` is a `Long` that js-bson would serialize as it is, as an int64 (the version it was made
 * by, no `toBSON`): those take the number path, other values go through the element writer, which
 * serializes them (or throws) as js-bson does.
 */
function isCurrentLong(value: unknown): value is Long {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { _bsontype?: unknown; toBSON?: unknown; [kBsonVersion]?: unknown };
  return v._bsontype === 'Long' && v[kBsonVersion] === kCurrentBsonVersion && v.toBSON === undefined;
}

/**
 * The element writer of values that are not numbers or dates, shared by every builder (one per builder
 * cost about 450 bytes of heap per open column of strings or objects): taken while in use, so that a
 * nested encode (from a `toBSON`) gets its own.
 */
let idleElementWriter: ElementWriter | undefined;

/**
 * Scratch for the leaves of an object matched against the reference, shared by every builder: filled and
 * read within one call, which runs no user code.
 */
const leavesScratch: Array<RefField | undefined> = [];

/** `#lastControl` when no control byte was recorded (the server's `kInvalidControlByte`). */
const kNoControl = -1;

/**
 * Scratch for writing intermediate binaries, shared by every builder: an open bucket keeps one builder
 * per field, so per-builder copies would multiply the catalog's memory, and intermediate() neither nests
 * nor runs user code. Each scratch state is pointed at the builder's buffers by `copyFrom`.
 */
const scratch = {
  regular: undefined as EncodingState | undefined,
  streams: [] as EncodingState[],
  builder: undefined as BSONColumnBuilder | undefined,
  /** Per stream: output length, item count, open control offset and its byte. */
  saved: [] as number[],
  controlByte: 0,
};

/** Size of the slabs diffs are copied into, and the largest diff copied into one. */
const kSlabSize = 8192;
const kMaxSlabbed = 1024;
let slab = new Uint8Array(kSlabSize);
// Kept next to the slab: reading `slab.buffer` per diff showed in profiles.
let slabBuffer = slab.buffer;
let slabUsed = 0;

/**
 * Reserve `n` bytes (at most {@link kMaxSlabbed}) of the current slab, starting a new slab when it is
 * full, and return where they start. Small diffs are cut from a shared slab, as Node's pooled `Buffer`s
 * are: allocating an `ArrayBuffer` per diff made garbage collection most of the cost of an intermediate()
 * call. A slab is never written again once handed out (a full slab is replaced, not reused), so a diff
 * never changes; it only keeps its slab alive.
 */
function reserveSlab(n: number): number {
  if (slabUsed + n > kSlabSize) {
    slab = new Uint8Array(kSlabSize);
    slabBuffer = slab.buffer;
    slabUsed = 0;
  }
  const at = slabUsed;
  slabUsed += n;
  return at;
}

/** A copy of `src[start, end)` that the caller owns (from the slab when small, see {@link reserveSlab}). */
function copyToSlab(src: Uint8Array, start: number, end: number): Uint8Array {
  const n = end - start;
  if (n > kMaxSlabbed) return src.slice(start, end);
  const at = reserveSlab(n);
  // Diffs are mostly a few dozen bytes: a loop beats `set(subarray())`, which allocates another view.
  const dest = slab;
  for (let i = 0; i < n; i++) dest[at + i] = src[start + i] ?? 0;
  return new Uint8Array(slabBuffer, at, n);
}

/** The `bytes` of a diff written into a sink (unused: the sink holds them). */
const kNoBytes = new Uint8Array(0);

/** Copies longer than this go through `set(subarray())`; shorter ones are cheaper as a loop. */
const kLoopCopyMax = 48;

/**
 * Copy `src[start, end)` to `dest` at `at`.
 *
 * @returns the end of the copy in `dest`.
 */
function copyInto(dest: Uint8Array, at: number, src: Uint8Array, start: number, end: number): number {
  const n = end - start;
  if (n <= 0) return at;
  // Diffs are mostly a few dozen bytes: a loop beats `set(subarray())`, which allocates a view. The
  // indices typed as int32 (`| 0`), so that the loop does no double arithmetic.
  if (n <= kLoopCopyMax) for (let i = start | 0, o = at | 0; i < end; i++, o++) dest[o] = src[i] ?? 0;
  else dest.set(src.subarray(start, end), at);
  return at + n;
}

/**
 * Where {@link BSONColumnBuilder.intermediateInto} appends a diff's bytes: `buf[0, length)` is in use. When
 * `buf` is too small it is replaced by a larger copy (views of the previous `buf` stay valid: its bytes
 * are never written again).
 */
export interface DiffSink {
  /** The bytes; replaced by a larger array when a diff does not fit. */
  buf: Uint8Array;
  /** Bytes of `buf` in use; a diff is appended at this position. */
  length: number;
}

/** Reserve `n` bytes at the end of `sink` (growing it) and return where they start. */
function reserveInSink(sink: DiffSink, n: number): number {
  const at = sink.length;
  if (at + n > sink.buf.length) {
    const grown = new Uint8Array(Math.max(2 * sink.buf.length, at + n, 256));
    grown.set(sink.buf.subarray(0, at));
    sink.buf = grown;
  }
  sink.length = at + n;
  return at;
}

/**
 * Initial capacity of a builder's buffer, and the size it goes back to when it holds little: after
 * intermediate() it holds at most one control block (up to 129 bytes), and typed arrays of up to 64 bytes
 * live on the heap, without a separate backing store.
 */
const kInitialCapacity = 64;
/** A buffer this much larger than what it holds after intermediate() is replaced by a smaller one. */
const kShrinkFactor = 4;

/**
 * Encodes a sequence of values into one BSONColumn binary, in one go or incrementally.
 *
 * In one go: {@link BSONColumnBuilder.append} and {@link BSONColumnBuilder.skip} every entry, then
 * {@link BSONColumnBuilder.finalize}, which returns the binary and leaves the builder empty for the next
 * column.
 *
 * Incrementally (MongoDB 8's write path, one builder per field of an open bucket): after each batch of
 * appends, {@link BSONColumnBuilder.intermediate} returns a {@link BinaryDiff}, the bytes that changed
 * since the previous call and where they start. Applying the diffs in order (see `applyBinaryDiff`) gives
 * exactly the bytes that encoding every entry at once gives. {@link BSONColumnBuilder.fromBinary} resumes
 * a stored column.
 *
 * @example
 * ```ts
 * const builder = new BSONColumnBuilder();
 * builder.append(new Date(0));
 * builder.append(new Date(1000));
 * let column = applyBinaryDiff(new Uint8Array(0), builder.intermediate()); // offset 0: the whole column
 * builder.append(new Date(2000));
 * const diff = builder.intermediate(); // only the open control block and the EOO
 * column = applyBinaryDiff(column, diff);
 * // later, from the stored bytes, without decoding the whole column:
 * const resumed = BSONColumnBuilder.fromBinary(column);
 * ```
 */
export class BSONColumnBuilder {
  readonly #out = new ByteWriter(kInitialCapacity);
  // Where #out[0] sits in the column: the bytes before it are final and no longer kept.
  #base = 0;
  // What the previous intermediate() wrote at the open control byte, to tell which bytes did not change
  // (the server's `lastControl`, `lastControlOffset`, `lastBufLength`).
  #lastControl = kNoControl;
  #lastControlOffset = 0;
  #lastBufLength = 0;
  // Reset rather than replaced between sections and columns: a new state allocates its tables.
  readonly #regular = new EncodingState(this.#out);
  #mode: Mode = Mode.regular;
  #reference: RefObject = kNoReference;
  #referenceType = 0;
  // Objects buffered while the reference is determined; `undefined` is a buffered missing entry.
  // Outside interleaved mode these hold shared empty arrays (a builder per open column should not carry
  // empty arrays of its own): #buffered and #streams are replaced, never pushed to, until a section starts.
  #buffered: Array<RefObject | undefined> = kNothingBuffered;
  #streams: SubStream[] = kNoStreams;

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
      if (isCurrentLong(value)) {
        this.#regular.appendInt64(value.getLowBits() >>> 0, value.getHighBits() >>> 0);
        return;
      }
    }
    if (value === undefined) {
      this.skip();
      return;
    }
    // Taken out while in use: serializing may run a `toBSON` that encodes another column.
    const el = idleElementWriter ?? new ElementWriter();
    idleElementWriter = undefined;
    try {
      el.write(value);
      if (el.type === BsonType.object || el.type === BsonType.array) {
        this.#appendObject(el, parseRefObject(el.bytes, el.start, el.type === BsonType.array));
        return;
      }
      if (this.#mode !== Mode.regular) this.#flushSubObjMode();
      this.#regular.append(el.type, el.bytes, el.start, el.end);
    } finally {
      idleElementWriter = el;
    }
  }

  /**
   * Append numbers: {@link BSONColumnBuilder.append} of each, in order (an int32 when integral and in
   * range, else a double, as js-bson writes them). From a `Float64Array` so that no value is boxed on the
   * way to the encoder.
   *
   * @param values - the numbers.
   * @param count - how many of them, from the first.
   */
  appendNumbers(values: Float64Array, count: number): void {
    if (this.#mode === Mode.regular) this.#regular.appendNumbers(values, count);
    else for (let i = 0; i < count; i++) this.append(values[i]);
  }

  /**
   * Append dates given as epoch milliseconds: {@link BSONColumnBuilder.appendDateMs} of each, in order.
   *
   * @param values - the times, epoch ms (integers).
   * @param count - how many of them, from the first.
   */
  appendDatesMs(values: Float64Array, count: number): void {
    if (this.#mode === Mode.regular) this.#regular.appendDates(values, count);
    else for (let i = 0; i < count; i++) this.appendDateMs(values[i] as number);
  }

  /**
   * Append a date given as epoch milliseconds: what {@link BSONColumnBuilder.append} does with a `Date` of
   * that time, without the `Date`.
   *
   * @param ms - the time, epoch ms (an integer).
   */
  appendDateMs(ms: number): void {
    if (this.#mode === Mode.regular) this.#regular.appendDate(ms);
    else this.append(new Date(ms));
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
    if (this.#base !== 0) {
      throw new InternalInvariantError(
        7105,
        'finalize() after intermediate() or fromBinary(): the builder no longer holds the whole binary',
      );
    }
    if (this.#mode === Mode.regular) this.#regular.flush();
    else this.#flushSubObjMode();
    this.#out.u8(0);
    const bytes = this.#out.toBytes();
    this.#out.reset();
    this.#regular.reset();
    this.#forgetControl();
    return bytes;
  }

  /**
   * Return to the state of a new builder, whatever was appended or returned before (an intermediate
   * binary, a resumed column): the map of an open bucket takes builders that closed buckets gave back
   * rather than making new ones (several objects each). The storage the builder held is given up.
   */
  reset(): void {
    this.#out.release();
    this.#base = 0;
    this.#forgetControl();
    this.#regular.reset();
    this.#toRegularMode();
  }

  /** Regular mode as a new builder has it: no reference, nothing buffered, no interleaved streams. */
  #toRegularMode(): void {
    this.#mode = Mode.regular;
    this.#reference = kNoReference;
    this.#referenceType = 0;
    this.#buffered = kNothingBuffered;
    this.#streams = kNoStreams;
  }

  /**
   * Whether {@link BSONColumnBuilder.parkInto} can record this builder: outside an interleaved section, a
   * 64-bit stream whose previous value fits in eight bytes (every column of numbers, dates, booleans).
   */
  get parkable(): boolean {
    return (
      this.#mode === Mode.regular &&
      this.#reference === kNoReference &&
      this.#buffered === kNothingBuffered &&
      this.#streams === kNoStreams &&
      this.#regular.parkable
    );
  }

  /** How many numbers {@link BSONColumnBuilder.parkInto} writes (only when {@link BSONColumnBuilder.parkable}). */
  get parkedLength(): number {
    return 4 + this.#regular.parkedLength + this.#out.parkedLength;
  }

  /**
   * Record this builder's whole state into `record` from index `at`: a few dozen numbers and its kept
   * bytes (the open control block), six to a number. A builder is several objects and a buffer; an open
   * bucket that waits between two runs of encoding (deferred, see `MeasurementMap`) keeps its columns as
   * one array of numbers instead, and its builders go back to a pool.
   * {@link BSONColumnBuilder.unparkFrom} on a reset builder continues exactly where this one stands: the
   * same diffs, the same bytes. Only when {@link BSONColumnBuilder.parkable}; the builder is unchanged.
   *
   * @param record - receives the numbers.
   * @param at - the first index to write.
   * @returns the index after the last one written.
   */
  parkInto(record: number[], at: number): number {
    record[at] = this.#base;
    record[at + 1] = this.#lastControl;
    record[at + 2] = this.#lastControlOffset;
    record[at + 3] = this.#lastBufLength;
    return this.#out.parkInto(record, this.#regular.parkInto(record, at + 4));
  }

  /**
   * Become the builder {@link BSONColumnBuilder.parkInto} recorded at `at`, whatever this builder held
   * before (no reset needed: a bucket's parked builders go straight to the next bucket that unparks).
   *
   * @param record - the numbers.
   * @param at - where {@link BSONColumnBuilder.parkInto} started writing.
   * @returns the index after the recorded builder.
   */
  unparkFrom(record: ReadonlyArray<number>, at: number): number {
    this.#toRegularMode();
    this.#base = record[at] as number;
    this.#lastControl = record[at + 1] as number;
    this.#lastControlOffset = record[at + 2] as number;
    this.#lastBufLength = record[at + 3] as number;
    return this.#out.unparkFrom(record, this.#regular.unparkFrom(record, at + 4));
  }

  /**
   * What changed in the binary since the previous call: the binary is what {@link finalize} would return
   * now, and the diff is its tail from the first byte that may differ from the previous call's binary
   * (the open Simple-8b control byte, or the end of what was final). The first call returns offset 0 and
   * the whole binary. The builder keeps encoding as if nothing had happened: the bytes after any sequence
   * of appends and calls are those of encoding everything at once. Offsets follow MongoDB 8's
   * `BSONColumnBuilder::intermediate()`.
   *
   * Cost: the pending Simple-8b values are packed into blocks after the kept bytes (in regular mode
   * without copying the encoding state; interleaved sections flush copies of their streams' states); the
   * column's earlier bytes are neither re-encoded nor copied. After the call, {@link finalize} may no longer be used (the
   * builder drops the bytes that are final).
   *
   * @returns the changed tail: truncate the previous binary at `offset` and append `bytes`. `bytes` is the
   *   caller's and never changes. A diff at offset 0 (a whole column) has its own `ArrayBuffer`; later
   *   small diffs share one (as Node's pooled `Buffer`s do): copy them to keep them long without keeping
   *   that buffer alive.
   */
  intermediate(): BinaryDiff {
    if (this.#mode === Mode.regular) {
      const tail = this.#regular.writeFlushTail();
      if (tail !== undefined) return this.#regularDiff(tail, undefined);
    }
    return this.#generalDiff(undefined);
  }

  /**
   * {@link intermediate} without a diff object: the changed tail's bytes are appended to `sink` (at
   * `sink.length`, which grows by their number) and its offset in the column is returned. What a caller
   * collecting the diffs of many columns in one buffer uses, so that a commit allocates nothing per column.
   *
   * @param sink - where the bytes go.
   * @returns where the changed tail starts in the previous binary (see {@link intermediate}).
   */
  intermediateInto(sink: DiffSink): number {
    if (this.#mode === Mode.regular) {
      const tail = this.#regular.writeFlushTail();
      if (tail !== undefined) return this.#regularDiff(tail, sink).offset;
    }
    return this.#generalDiff(sink).offset;
  }

  /**
   * {@link intermediate} by finalizing a copy of the tail (interleaved mode, or nothing pending): into
   * `sink` when given (the returned `bytes` are then not meaningful).
   */
  #generalDiff(sink: DiffSink | undefined): BinaryDiff {
    const out = this.#out;
    const length = out.length;
    const control = this.#mode === Mode.regular ? this.#regular.controlPos : -1;
    const prevOffset = this.#base;
    this.#writeFinalTail();
    const total = out.length;
    const buf = out.buf;
    let identical = 0;
    if (control < 0) {
      this.#forgetControl();
    } else {
      // The last control byte of the finalized binary: a full control is no longer tracked, so walk on.
      let last = control;
      let next = 0;
      while (total > last + next + 1) {
        last += next;
        next = 1 + 8 * (((buf[last] ?? 0) & 0x0f) + 1);
      }
      identical = this.#trackControls(control, length, last, buf[last] ?? 0, buf[control] ?? 0);
    }
    let bytes: Uint8Array = kNoBytes;
    if (sink !== undefined) {
      const at = reserveInSink(sink, total - identical);
      copyInto(sink.buf, at, buf, identical, total);
    } else {
      // A diff at offset 0 is a whole column, which a store is likely to keep as is: its own buffer.
      bytes = prevOffset + identical === 0 ? buf.slice(0, total) : copyToSlab(buf, identical, total);
    }
    this.#restoreTail(length);
    this.#keepFrom(control < 0 ? length : control);
    return { offset: prevOffset + identical, bytes };
  }

  /**
   * Record the open control byte (at `control`, now `controlByte`) and the last control byte of the
   * binary (at `last`, `lastByte`) for the next call, as the server's `lastControl`, `lastControlOffset`
   * and `lastBufLength` do; #out holds `length` bytes before the final tail.
   *
   * @returns how many bytes from the start of #out are as the previous call left them: the blocks written
   *   before it are unchanged when its last control byte is still the last, at the same place.
   */
  #trackControls(
    control: number,
    length: number,
    last: number,
    lastByte: number,
    controlByte: number,
  ): number {
    let identical = 0;
    if (
      this.#lastControl !== kNoControl &&
      this.#base !== 0 &&
      this.#lastControlOffset === last &&
      this.#lastControl === lastByte
    ) {
      identical = this.#lastBufLength - control;
    }
    if (scaleIndexForControlByte(lastByte) !== scaleIndexForControlByte(controlByte)) {
      this.#lastControl = lastByte;
      this.#lastControlOffset = last - control;
    } else {
      this.#lastControl = controlByte;
      this.#lastControlOffset = 0;
    }
    this.#lastBufLength = length - control;
    return identical;
  }

  /**
   * {@link intermediate} in regular mode, from the blocks the pending values flush to (`tail`): the
   * binary is #out (its open control byte as `tail` leaves it), `tail` and the EOO, and #out is left as
   * it is.
   */
  #regularDiff(tail: FlushTail, sink: DiffSink | undefined): BinaryDiff {
    const out = this.#out;
    const length = out.length;
    const control = this.#regular.controlPos;
    const prevOffset = this.#base;
    const tailBytes = tail.bytes;
    const total = length + tailBytes.length + 1;
    let identical = 0;
    if (control < 0) {
      this.#forgetControl();
    } else {
      // The last control byte of the finalized binary: the open one, or the last the tail opened.
      identical = this.#trackControls(
        control,
        length,
        tail.lastControlPos,
        tail.lastControl,
        tail.openControl,
      );
    }
    // A diff at offset 0 is a whole column, which a store is likely to keep as is: give it its own buffer.
    // Other diffs are cut from the shared slab (see reserveSlab).
    const n = total - identical;
    let dest: Uint8Array;
    let at: number;
    let bytes: Uint8Array;
    if (sink !== undefined) {
      at = reserveInSink(sink, n);
      dest = sink.buf;
      bytes = kNoBytes;
    } else if (prevOffset + identical === 0 || n > kMaxSlabbed) {
      bytes = dest = new Uint8Array(n);
      at = 0;
    } else {
      at = reserveSlab(n);
      dest = slab;
      bytes = new Uint8Array(slabBuffer, at, n);
    }
    const k = copyInto(dest, at, out.buf, identical, length);
    if (control >= identical) dest[at + control - identical] = tail.openControl;
    dest[copyInto(dest, k, tailBytes.buf, identical > length ? identical - length : 0, tailBytes.length)] = 0;
    this.#keepFrom(control < 0 ? length : control);
    return { offset: prevOffset + identical, bytes };
  }

  /** No control byte is tracked any more (none is open, or the column was finalized). */
  #forgetControl(): void {
    this.#lastControl = kNoControl;
    this.#lastControlOffset = 0;
    this.#lastBufLength = 0;
  }

  /**
   * Drop the bytes of #out before `keepFrom`: they are final. A writer left empty gives up its storage
   * (about 260 bytes of heap per open column: the columns of a bucket that holds one measurement have no
   * open control and keep nothing).
   */
  #keepFrom(keepFrom: number): void {
    const out = this.#out;
    if (keepFrom > 0) {
      // Only storage that lives on the heap: one kept out of it (larger than kInitialCapacity) would be
      // allocated again (and zeroed) within a few appends, as a column's open control grows.
      if (keepFrom === out.length && out.buf.length <= kInitialCapacity) out.release();
      else out.dropFront(keepFrom, kShrinkFactor, kInitialCapacity);
      this.#regular.rebase(keepFrom);
      this.#base += keepFrom;
    }
  }

  /**
   * The length in bytes of the binary as it would be finalized now (pending values and the final EOO
   * included): the server's compressed bucket size. Costs a flush of the pending values into a copy.
   */
  get size(): number {
    const length = this.#out.length;
    this.#writeFinalTail();
    const size = this.#base + this.#out.length;
    this.#restoreTail(length);
    return size;
  }

  /**
   * A builder that continues an existing column, as if its values had been appended to a new builder
   * and {@link intermediate} called: appending more values and calling {@link intermediate} returns diffs
   * against `binary`, and the result is the binary of encoding all values at once.
   *
   * Before the column's last uncompressed literal the encoder's state is final. For integers, booleans,
   * dates, timestamps, ObjectIds and repeat-only types, the Simple-8b slots after it are summed into the
   * last value without decoding values, and only the slots from the last run of RLE blocks on are packed
   * again. Other types (doubles, strings, binData, decimals) have the values after the last literal
   * decoded and re-appended; a column with an interleaved (object) section is replayed whole, as the
   * server does. When `binary` was encoded differently than this encoder would (another encoder,
   * legacy interleaving), the first diff starts at that point and rewrites the rest with the same values.
   *
   * @param binary - a BSONColumn binary (the BinData subtype 7 payload).
   * @returns a builder positioned after the column's last value.
   * @throws TimeseriesError (`BadValue`) when `binary` is malformed.
   */
  static fromBinary(binary: Uint8Array): BSONColumnBuilder {
    const from = reopenPoint(binary);
    const resumed = new BSONColumnBuilder();
    const base = resumeRegular64(binary, from, resumed.#regular, resumed.#out);
    if (base >= 0) {
      resumed.#base = base;
      if (resumed.#finalTailEquals(binary.subarray(base))) {
        resumed.intermediate();
        return resumed;
      }
    }
    const builder = new BSONColumnBuilder();
    const tail = binary.subarray(from);
    builder.#base = from;
    for (const value of decodeColumn(tail)) builder.append(value);
    // Only when re-encoding gives back the stored bytes may later diffs point into them.
    if (builder.#finalTailEquals(tail)) builder.intermediate();
    return builder;
  }

  #finalTailEquals(expected: Uint8Array): boolean {
    const out = this.#out;
    const length = out.length;
    this.#writeFinalTail();
    let equal = out.length === expected.length;
    for (let i = 0; equal && i < expected.length; i++) equal = out.buf[i] === expected[i];
    this.#restoreTail(length);
    return equal;
  }

  /**
   * Append to #out what finalizing now would write (pending values, open sections, the EOO), leaving the
   * encoding states untouched; {@link #restoreTail} takes it back out.
   */
  #writeFinalTail(): void {
    const out = this.#out;
    switch (this.#mode) {
      case Mode.regular: {
        const control = this.#regular.controlPos;
        // The copy counts its blocks into the shared open control byte: keep the real one.
        scratch.controlByte = control >= 0 ? (out.buf[control] ?? 0) : 0;
        const tail = this.#regular.writeFlushTail();
        if (tail !== undefined) {
          if (control >= 0) out.buf[control] = tail.openControl;
          out.bytes(tail.bytes.buf, 0, tail.bytes.length);
          break;
        }
        const state = (scratch.regular ??= new EncodingState(out));
        state.copyFrom(this.#regular);
        state.flush();
        break;
      }
      case Mode.determining: {
        // The reference is not fixed yet: encode the buffered objects (at most twice the reference's
        // leaves) as a fresh section in a scratch builder.
        const section = (scratch.builder ??= new BSONColumnBuilder());
        section.#out.reset();
        section.#reference = this.#reference;
        section.#referenceType = this.#referenceType;
        section.#buffered = this.#buffered.slice();
        section.#mode = Mode.determining;
        section.#flushSubObjMode();
        out.bytes(section.#out.buf, 0, section.#out.length);
        break;
      }
      case Mode.appending: {
        const streams = this.#streams;
        const saved = scratch.saved;
        saved.length = 0;
        for (let i = 0; i < streams.length; i++) {
          const s = streams[i];
          if (s === undefined) continue;
          const control = s.state.controlPos;
          saved.push(s.out.length, s.items.length, control, control >= 0 ? (s.out.buf[control] ?? 0) : 0);
          const state = (scratch.streams[i] ??= new EncodingState(s.out));
          state.copyFrom(s.state);
          state.flush();
        }
        writeInDecoderOrder(streams, out);
        out.u8(0);
        break;
      }
      default: {
        const unreachable: never = this.#mode;
        throw new InternalInvariantError(7106, `unknown builder mode ${String(unreachable)}`);
      }
    }
    out.u8(0);
  }

  /** Undo {@link #writeFinalTail}: #out back to `length` bytes, open control bytes as they were. */
  #restoreTail(length: number): void {
    const out = this.#out;
    out.length = length;
    if (this.#mode === Mode.regular) {
      const control = this.#regular.controlPos;
      if (control >= 0) out.buf[control] = scratch.controlByte;
      return;
    }
    if (this.#mode !== Mode.appending) return;
    const saved = scratch.saved;
    const streams = this.#streams;
    for (let i = 0; i < streams.length; i++) {
      const s = streams[i];
      if (s === undefined) continue;
      s.out.length = saved[4 * i] ?? 0;
      s.items.length = saved[4 * i + 1] ?? 0;
      const control = saved[4 * i + 2] ?? -1;
      if (control >= 0) s.out.buf[control] = saved[4 * i + 3] ?? 0;
    }
  }

  /** Append the object or array `el` holds, parsed as `obj`. */
  #appendObject(el: ElementWriter, obj: RefObject): void {
    const type = el.type;
    const numElements = countLeaves(obj);
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
      const leaves = leavesScratch;
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
    const leaves = leavesScratch;
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
    this.#buffered = kNothingBuffered;
  }

  #flushSubObjMode(): void {
    if (this.#mode === Mode.determining) this.#finishDetermining();
    const streams = this.#streams;
    for (const s of streams) s.state.flush();
    writeInDecoderOrder(streams, this.#out);
    this.#out.u8(0);
    this.#streams = kNoStreams;
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
