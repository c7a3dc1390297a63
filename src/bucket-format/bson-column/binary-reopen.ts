/**
 * Where a column builder can resume an existing BSONColumn binary (the server's
 * `BSONColumnBuilder::BinaryReopen::scan`): the encoder's state right after an uncompressed literal is
 * that literal and nothing else, so everything before the last literal is final and only the items after
 * it need to be replayed.
 *
 * @packageDocumentation
 */
import type { Int64Halves } from '../../util/int64.js';
import { add64 } from '../../util/int64.js';
import {
  BsonType,
  invalidColumn,
  isInterleavedStartControlByte,
  isLiteralControlByte,
  isSimple8bControlByte,
} from './bsoncolumn-util.js';
import { elementValueSize } from './bson-element.js';
import type { ByteWriter } from './byte-writer.js';
import type { EncodingState } from './encoding-state.js';
import { Simple8bReader, kRleMultiplier, kRleSelector } from './simple8b.js';
import { decodeObjectId, encodeObjectId, unzigzag64 } from './simple8b-type-util.js';

/** {@link reopenPoint}'s answer for a binary with an interleaved section: replay it whole. */
export const kReopenFromStart = 0;

/**
 * Walk the items of a column (literals and Simple-8b controls, without decoding them) and find where the
 * encoder state can be rebuilt from: the offset of the last literal, or the start of the binary when there
 * is none or when the binary has an interleaved section (whose end cannot be found without decoding it;
 * the server also replays such binaries whole).
 *
 * @param bytes - a BSONColumn binary.
 * @returns the offset of the first item to replay; `bytes.subarray(offset)` is itself a valid column.
 * @throws TimeseriesError (`BadValue`) for a malformed binary.
 */
export function reopenPoint(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  let restart = 0;
  let pos = 0;
  for (;;) {
    if (pos >= end) throw invalidColumn('missing final EOO');
    const b = bytes[pos] ?? 0;
    if (b === 0) {
      if (pos !== end - 1) throw invalidColumn('Final EOO found before reaching end of buffer');
      return restart;
    }
    if (isInterleavedStartControlByte(b)) return kReopenFromStart;
    if (isLiteralControlByte(b)) {
      if (pos + 1 >= end || bytes[pos + 1] !== 0)
        throw invalidColumn(`literal without empty field name at offset ${String(pos)}`);
      restart = pos;
      pos += 2 + elementValueSize(bytes, view, b, pos + 2, end);
    } else if (isSimple8bControlByte(b)) {
      pos += 1 + 8 * ((b & 0x0f) + 1);
    } else {
      throw invalidColumn(`Invalid control byte 0x${b.toString(16)} at offset ${String(pos)}`);
    }
  }
}

/** Literal types whose Simple-8b stream is 64-bit and unscaled: the ones {@link resumeRegular64} handles. */
function resumable(type: number): boolean {
  switch (type) {
    case BsonType.double:
    case BsonType.string:
    case BsonType.code:
    case BsonType.binData:
    case BsonType.decimal128:
      return false;
    default:
      return true;
  }
}

/** Entries of an RLE block, from its first byte. */
function rleEntries(low: number): number {
  return ((low >> 4) + 1) * kRleMultiplier;
}

/** `(hi:lo) × n` modulo 2^64, for `n` below 2^21. */
function mul64(lo: number, hi: number, n: number, out: Int64Halves): void {
  const p = lo * n;
  out.lo = p >>> 0;
  out.hi = (Math.imul(hi, n) + Math.floor(p / 4294967296)) >>> 0;
}

// Scratch for resumeRegular64: one reader, halves and the last value's bytes (a resume is never nested).
const reader = new Simple8bReader();
const scratch: Int64Halves = { lo: 0, hi: 0 };
const lastValue = new Uint8Array(12);
const lastView = new DataView(lastValue.buffer);

/**
 * Rebuild the encoding state of a column whose values after its last literal (at `from`, see
 * {@link reopenPoint}) are 64-bit, unscaled Simple-8b deltas: integers, booleans, dates, timestamps,
 * ObjectIds, and the types that only repeat. The slots are read, not decoded into values: the last value
 * is accumulated from them, and only the slots from the last run of RLE blocks on are appended to the
 * Simple-8b builder again. At the first block of such a run nothing is pending (RLE starts only on an
 * empty builder) and the run repeats the slot before it, so that state is known exactly; without a run,
 * the state right after the literal is.
 *
 * @param bytes - the column binary.
 * @param from - offset of the last literal, or 0 when the column has none.
 * @param state - a state to resume; it writes to `out`.
 * @param out - empty output; receives the open control byte and its blocks written so far.
 * @returns the offset in `bytes` of `out`'s first byte, or -1 when the column is not of such a type (the
 *   caller replays its values instead).
 */
export function resumeRegular64(
  bytes: Uint8Array,
  from: number,
  state: EncodingState,
  out: ByteWriter,
): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const first = bytes[from] ?? 0;
  const type = isLiteralControlByte(first) ? first : 0;
  if (!resumable(type)) return -1;
  const valueStart = from + 2;
  const valueEnd =
    type === 0 ? valueStart : valueStart + elementValueSize(bytes, view, type, valueStart, bytes.length);
  // The value as the 64-bit base its deltas apply to.
  let baseLo = 0;
  let baseHi = 0;
  switch (type) {
    case BsonType.int32: {
      const x = view.getInt32(valueStart, true);
      baseLo = x >>> 0;
      baseHi = x < 0 ? 0xffffffff : 0;
      break;
    }
    case BsonType.bool:
      baseLo = bytes[valueStart] ?? 0;
      break;
    case BsonType.int64:
    case BsonType.date:
    case BsonType.timestamp:
      baseLo = view.getUint32(valueStart, true);
      baseHi = view.getUint32(valueStart + 4, true);
      break;
    case BsonType.objectId:
      encodeObjectId(bytes, valueStart, scratch);
      baseLo = scratch.lo;
      baseHi = scratch.hi;
      break;
    default:
      break;
  }
  const deltaOfDelta = type === BsonType.date || type === BsonType.timestamp || type === BsonType.objectId;
  const sums = type === BsonType.int32 || type === BsonType.int64 || type === BsonType.bool || deltaOfDelta;
  let deltaLo = 0;
  let deltaHi = 0;
  // Where to resume: the control byte and block index of the last RLE run's first block, and the slot
  // value before it. Without a run: right after the literal, where the previous slot value is 0.
  let resumeControl = type === 0 ? from : valueEnd;
  let resumeBlock = 0;
  let resumeLo = 0;
  let resumeHi = 0;
  reader.resetPrevious();
  let prevWasRle = false;
  let pos = type === 0 ? from : valueEnd;
  for (;;) {
    const control = bytes[pos] ?? 0;
    if (control === 0) break;
    // A scaled control here is invalid: leave it to the decoder's error.
    if (!isSimple8bControlByte(control) || control >> 4 !== 0x8) return -1;
    const blocks = (control & 0x0f) + 1;
    for (let j = 0; j < blocks; j++) {
      const blockPos = pos + 1 + 8 * j;
      const isRle = ((bytes[blockPos] ?? 0) & 0x0f) === kRleSelector;
      if (isRle && !prevWasRle) {
        resumeControl = pos;
        resumeBlock = j;
        resumeLo = reader.missing ? 0xffffffff : reader.lo;
        resumeHi = reader.missing ? 0xffffffff : reader.hi;
      }
      prevWasRle = isRle;
      if (isRle && (reader.missing || (reader.lo === 0 && reader.hi === 0))) {
        // Repeats of a skip or a zero: no change to a delta type's value; a delta-of-delta type's value
        // moves by the last delta at each entry.
        if (deltaOfDelta && !reader.missing) {
          mul64(deltaLo, deltaHi, rleEntries(bytes[blockPos] ?? 0), scratch);
          add64(baseLo, baseHi, scratch.lo, scratch.hi, scratch);
          baseLo = scratch.lo;
          baseHi = scratch.hi;
        }
        continue;
      }
      reader.start(bytes, view, blockPos, 1);
      while (reader.hasNext()) {
        if (!reader.next() || !sums) continue;
        unzigzag64(reader.lo, reader.hi, scratch);
        if (deltaOfDelta) {
          add64(deltaLo, deltaHi, scratch.lo, scratch.hi, scratch);
          deltaLo = scratch.lo;
          deltaHi = scratch.hi;
        }
        add64(baseLo, baseHi, scratch.lo, scratch.hi, scratch);
        baseLo = scratch.lo;
        baseHi = scratch.hi;
      }
    }
    pos += 1 + 8 * blocks;
  }
  // Resume: the open control's blocks before the resume block, then the slots from it on.
  const open = resumeBlock > 0;
  if (open) {
    out.bytes(bytes, resumeControl, resumeControl + 1 + 8 * resumeBlock);
    out.buf[0] = ((bytes[resumeControl] ?? 0) & 0xf0) | (resumeBlock - 1);
  }
  state.resumeStream(type, bytes, valueStart, valueEnd, open ? 0 : -1, resumeBlock, resumeLo, resumeHi);
  // What the replayed RLE blocks repeat.
  reader.lo = resumeLo;
  reader.hi = resumeHi;
  reader.missing = resumeLo === 0xffffffff && resumeHi === 0xffffffff;
  pos = resumeControl;
  let j = resumeBlock;
  for (;;) {
    const control = bytes[pos] ?? 0;
    if (control === 0) break;
    const blocks = (control & 0x0f) + 1;
    for (; j < blocks; j++) {
      const blockPos = pos + 1 + 8 * j;
      if (((bytes[blockPos] ?? 0) & 0x0f) === kRleSelector) {
        const lo = reader.missing ? 0xffffffff : reader.lo;
        const hi = reader.missing ? 0xffffffff : reader.hi;
        if (!state.replayRun(lo, hi, rleEntries(bytes[blockPos] ?? 0))) return -1;
        continue;
      }
      reader.start(bytes, view, blockPos, 1);
      while (reader.hasNext()) {
        if (!reader.next()) state.skip();
        else if (!state.replaySlot(reader.lo, reader.hi)) return -1;
      }
    }
    j = 0;
    pos += 1 + 8 * blocks;
  }
  // The last value, from the accumulated base.
  let size = 0;
  switch (type) {
    case BsonType.int32:
      lastView.setUint32(0, baseLo, true);
      size = 4;
      break;
    case BsonType.bool:
      lastValue[0] = baseLo & 0xff;
      size = 1;
      break;
    case BsonType.int64:
    case BsonType.date:
    case BsonType.timestamp:
      lastView.setUint32(0, baseLo, true);
      lastView.setUint32(4, baseHi, true);
      size = 8;
      break;
    case BsonType.objectId:
      decodeObjectId(baseLo, baseHi, bytes.subarray(valueStart + 4, valueStart + 9), lastValue);
      size = 12;
      break;
    default:
      break;
  }
  if (size > 0) state.resumePrevious(type, lastValue, 0, size, deltaLo, deltaHi, baseLo, baseHi);
  return resumeControl;
}
