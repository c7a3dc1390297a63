/**
 * Where a column builder can resume an existing BSONColumn binary (the server's
 * `BSONColumnBuilder::BinaryReopen::scan`): the encoder's state right after an uncompressed literal is
 * that literal and nothing else, so everything before the last literal is final and only the items after
 * it need to be replayed.
 *
 * @packageDocumentation
 */
import {
  invalidColumn,
  isInterleavedStartControlByte,
  isLiteralControlByte,
  isSimple8bControlByte,
} from './bsoncolumn-util.js';
import { elementValueSize } from './bson-element.js';

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
