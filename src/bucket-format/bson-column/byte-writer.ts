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
    this.buf = new Uint8Array(capacity);
  }

  #reserve(n: number): void {
    const need = this.length + n;
    if (need <= this.buf.length) return;
    const next = new Uint8Array(Math.max(need, this.buf.length * 2, kMinGrowth));
    next.set(this.buf.subarray(0, this.length));
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
      this.buf = new Uint8Array(kDefaultCapacity);
    }
  }

  /**
   * Give up the storage of an empty writer (the next write allocates again): a column builder holds a
   * writer for as long as its bucket is open, and most of the time nothing in it.
   */
  release(): void {
    this.length = 0;
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
      const next = new Uint8Array(Math.max(minCapacity, left * 2));
      next.set(this.buf.subarray(n, this.length));
      this.buf = next;
    } else {
      this.buf.copyWithin(0, n, this.length);
    }
    this.length = left;
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
