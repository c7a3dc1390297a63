/**
 * A growable byte buffer with little-endian writers (the server's `BufBuilder`).
 *
 * @packageDocumentation
 */

const kDefaultCapacity = 256;
/** Largest storage {@link ByteWriter.reset} keeps. */
const kMaxRetainedBytes = 1 << 16;
/**
 * Smallest storage a writer grows to (after {@link ByteWriter.release}): 64 bytes, the most a typed array
 * holds on the heap, so that a released column builder's buffer is allocated again once, cheaply.
 */
const kMinGrowth = 64;
/** The storage of a released writer, shared: it is never written (every write reserves first). */
const kNoStorage = new Uint8Array(0);
/** Largest storage kept for reuse by {@link spareStorage}. */
const kMaxSpareBytes = 4096;
/** Bytes {@link ByteWriter.parkInto} puts in one number (below 2^48: exact in a double). */
const kBytesPerNumber = 6;
const kTwoTo32 = 2 ** 32;
/** Spare storages kept per size. */
const kMaxSparesPerSize = 16;
/**
 * Storage that writers gave up (grown out of, shrunk from, released), by size class: index `c` holds
 * arrays of `kMinGrowth << c` bytes. An open column's writer grows and shrinks as its open control fills
 * and closes (64, 128, 256 bytes, then back), thousands of columns in turn: taking the storage another
 * writer just gave up saves allocating (and collecting) an array each time, most of them outside the
 * heap. A writer's storage never escapes it (every reader copies or reads within a call), so reuse is
 * safe; the bytes past `length` are never read, so a reused array is not cleared. Bounded: at most
 * {@link kMaxSparesPerSize} arrays per size up to {@link kMaxSpareBytes}, 130 KB in all.
 */
const spares: Uint8Array[][] = [];
for (let size = kMinGrowth; size <= kMaxSpareBytes; size *= 2) spares.push([]);

/** Storage of at least `min` bytes: a spare one when there is one, else a new one (a power of two). */
function spareStorage(min: number): Uint8Array {
  if (min > kMaxSpareBytes) return new Uint8Array(min);
  let size = kMinGrowth;
  let c = 0;
  while (size < min) {
    size *= 2;
    c++;
  }
  return spares[c]?.pop() ?? new Uint8Array(size);
}

/** Keep `buf`, which its writer gave up, for {@link spareStorage} (when it is of a kept size). */
function giveUp(buf: Uint8Array): void {
  const size = buf.length;
  if (size < kMinGrowth || size > kMaxSpareBytes || (size & (size - 1)) !== 0) return;
  const pool = spares[31 - Math.clz32(size / kMinGrowth)];
  if (pool !== undefined && pool.length < kMaxSparesPerSize) pool.push(buf);
}

/** Growable byte buffer. `length` is the number of bytes written. */
export class ByteWriter {
  /** Backing storage; valid up to {@link ByteWriter.length}. */
  buf: Uint8Array;
  /** Bytes written. */
  length = 0;

  /**
   * @param capacity - initial capacity in bytes.
   * @defaultValue capacity 256
   */
  constructor(capacity: number = kDefaultCapacity) {
    this.buf = spareStorage(capacity);
  }

  #reserve(n: number): void {
    const need = this.length + n;
    if (need <= this.buf.length) return;
    const next = spareStorage(Math.max(need, this.buf.length * 2));
    copyPrefix(next, this.buf, 0, this.length);
    giveUp(this.buf);
    this.buf = next;
  }

  /**
   * Append one byte.
   *
   * @param b - 0..255.
   */
  u8(b: number): void {
    this.#reserve(1);
    this.buf[this.length++] = b;
  }

  /**
   * Append a little-endian int32.
   *
   * @param v - value.
   */
  i32(v: number): void {
    this.#reserve(4);
    this.setI32(this.length, v);
    this.length += 4;
  }

  /**
   * Append a little-endian uint64 given as two 32-bit halves (the 64-bit encoder's representation, see
   * `Int64Halves`): two 32-bit stores, no bigint.
   *
   * @param lo - bits 0..31.
   * @param hi - bits 32..63.
   */
  u64Halves(lo: number, hi: number): void {
    this.#reserve(8);
    this.setI32(this.length, lo);
    this.setI32(this.length + 4, hi);
    this.length += 8;
  }

  /**
   * Append `src[start, end)`.
   *
   * @param src - source bytes.
   * @param start - first byte.
   * @param end - end (exclusive).
   */
  bytes(src: Uint8Array, start: number, end: number): void {
    const n = end - start;
    this.#reserve(n);
    const buf = this.buf;
    // Literals are mostly a few bytes: a loop beats `set(subarray())`, which allocates a view.
    if (n <= 16) for (let i = 0; i < n; i++) buf[this.length + i] = src[start + i] ?? 0;
    else buf.set(src.subarray(start, end), this.length);
    this.length += n;
  }

  /**
   * Overwrite the int32 at `pos` (a length prefix written earlier).
   *
   * @param pos - offset.
   * @param v - value.
   */
  setI32(pos: number, v: number): void {
    // Byte stores rather than a DataView: a writer per open column would otherwise carry one more object.
    const buf = this.buf;
    buf[pos] = v & 0xff;
    buf[pos + 1] = (v >>> 8) & 0xff;
    buf[pos + 2] = (v >>> 16) & 0xff;
    buf[pos + 3] = v >>> 24;
  }

  /**
   * Forget the bytes written, to write a new sequence into the same storage (saves growing a new buffer
   * per column). Storage that grew past {@link kMaxRetainedBytes} is dropped so one large column does not
   * pin its memory.
   */
  reset(): void {
    this.length = 0;
    if (this.buf.length > kMaxRetainedBytes) {
      this.buf = spareStorage(kDefaultCapacity);
    }
  }

  /**
   * Give up the storage of an empty writer (the next write allocates again): a column builder holds a
   * writer for as long as its bucket is open, and most of the time nothing in it.
   */
  release(): void {
    this.length = 0;
    giveUp(this.buf);
    this.buf = kNoStorage;
  }

  /**
   * Drop the first `n` bytes written, moving the rest to the front; when the storage is then more than
   * `shrinkFactor` times what it holds (and larger than `minCapacity`), move it to a smaller one so that a
   * long-lived writer does not keep the peak size of its past.
   *
   * @param n - bytes to drop, at most {@link ByteWriter.length}.
   * @param shrinkFactor - how much larger than its content the storage may stay.
   * @param minCapacity - the smallest storage worth moving to.
   * @defaultValue minCapacity 256
   */
  dropFront(n: number, shrinkFactor: number, minCapacity: number = kDefaultCapacity): void {
    const left = this.length - n;
    if (this.buf.length > minCapacity && left * shrinkFactor < this.buf.length) {
      const next = spareStorage(Math.max(minCapacity, left * 2));
      copyPrefix(next, this.buf, n, this.length);
      giveUp(this.buf);
      this.buf = next;
    } else {
      this.buf.copyWithin(0, n, this.length);
    }
    this.length = left;
  }

  /** How many numbers {@link ByteWriter.parkInto} writes. */
  get parkedLength(): number {
    return 1 + Math.ceil(this.length / kBytesPerNumber);
  }

  /**
   * Record the bytes written into `record` from index `at`: their count, then six bytes to a number (an
   * integer below 2^48, exact in a double). See `BSONColumnBuilder.parkInto`.
   *
   * @param record - receives the numbers.
   * @param at - the first index to write.
   * @returns the index after the last one written.
   */
  parkInto(record: number[], at: number): number {
    const { buf, length } = this;
    record[at++] = length;
    // Bytes 0-3 as a uint32, bytes 4-5 above it: integer operations, no division of doubles.
    for (let i = 0; i < length; i += kBytesPerNumber) {
      let lo = 0;
      let hi = 0;
      if (i + kBytesPerNumber <= length) {
        lo =
          ((buf[i] ?? 0) |
            ((buf[i + 1] ?? 0) << 8) |
            ((buf[i + 2] ?? 0) << 16) |
            ((buf[i + 3] ?? 0) << 24)) >>>
          0;
        hi = (buf[i + 4] ?? 0) | ((buf[i + 5] ?? 0) << 8);
      } else {
        for (let k = length - i - 1; k >= 0; k--) {
          if (k < 4) lo = (lo * 256 + (buf[i + k] ?? 0)) >>> 0;
          else hi = hi * 256 + (buf[i + k] ?? 0);
        }
      }
      record[at++] = lo + hi * kTwoTo32;
    }
    return at;
  }

  /**
   * Hold exactly the bytes {@link ByteWriter.parkInto} recorded at `at` (what was written before is
   * forgotten).
   *
   * @param record - the numbers.
   * @param at - where {@link ByteWriter.parkInto} started writing.
   * @returns the index after the recorded bytes.
   */
  unparkFrom(record: ReadonlyArray<number>, at: number): number {
    const length = record[at++] as number;
    if (length > this.buf.length) {
      giveUp(this.buf);
      this.buf = spareStorage(length);
    }
    const buf = this.buf;
    for (let i = 0; i < length; i += kBytesPerNumber) {
      const v = record[at++] as number;
      const hi = Math.floor(v / kTwoTo32);
      const lo = v - hi * kTwoTo32;
      if (i + kBytesPerNumber <= length) {
        buf[i] = lo & 0xff;
        buf[i + 1] = (lo >>> 8) & 0xff;
        buf[i + 2] = (lo >>> 16) & 0xff;
        buf[i + 3] = lo >>> 24;
        buf[i + 4] = hi & 0xff;
        buf[i + 5] = hi >>> 8;
      } else {
        for (let k = 0; i + k < length; k++)
          buf[i + k] = k < 4 ? (lo >>> (8 * k)) & 0xff : (hi >>> (8 * k - 32)) & 0xff;
      }
    }
    this.length = length;
    return at;
  }

  /**
   * A copy of the bytes written.
   *
   * @returns a new array of exactly {@link ByteWriter.length} bytes.
   */
  toBytes(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

/** Copy `src[start, end)` to the start of `dest`: a loop for the few bytes an open control mostly holds. */
function copyPrefix(dest: Uint8Array, src: Uint8Array, start: number, end: number): void {
  if (end - start <= 64) for (let i = start; i < end; i++) dest[i - start] = src[i] ?? 0;
  else dest.set(src.subarray(start, end));
}
