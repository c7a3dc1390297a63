/**
 * A growable byte buffer with little-endian writers (the server's `BufBuilder`).
 *
 * @packageDocumentation
 */

/** Growable byte buffer. `length` is the number of bytes written. */
export class ByteWriter {
  /** Backing storage; valid up to {@link ByteWriter.length}. */
  buf: Uint8Array;
  #view: DataView;
  /** Bytes written. */
  length = 0;

  /**
   * @param capacity - initial capacity in bytes.
   * @defaultValue capacity 256
   */
  constructor(capacity = 256) {
    this.buf = new Uint8Array(capacity);
    this.#view = new DataView(this.buf.buffer);
  }

  #reserve(n: number): void {
    const need = this.length + n;
    if (need <= this.buf.length) return;
    const next = new Uint8Array(Math.max(need, this.buf.length * 2));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.#view = new DataView(next.buffer);
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
    this.#view.setInt32(this.length, v, true);
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
    this.#view.setUint32(this.length, lo, true);
    this.#view.setUint32(this.length + 4, hi, true);
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
    this.#reserve(end - start);
    this.buf.set(src.subarray(start, end), this.length);
    this.length += end - start;
  }

  /**
   * Overwrite the int32 at `pos` (a length prefix written earlier).
   *
   * @param pos - offset.
   * @param v - value.
   */
  setI32(pos: number, v: number): void {
    this.#view.setInt32(pos, v, true);
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
