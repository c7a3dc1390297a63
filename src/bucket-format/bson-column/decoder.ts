/**
 * The BSONColumn decoder (docs/bsoncolumn.md §1.8, §1.6): regular mode with one {@link DecodingState}, and
 * interleaved sections with one state per leaf of the reference object.
 *
 * @packageDocumentation
 */
import {
  BsonType,
  invalidColumn,
  isInterleavedStartControlByte,
  isLiteralControlByte,
  isSimple8bControlByte,
  kInterleavedStartArray,
} from './bsoncolumn-util.js';
import { elementValueSize } from './bson-element.js';
import { DecodingState, tooManyEntries } from './decoding-state.js';
import { buildEntry, parseReference } from './interleaved-schema.js';

/** Options of {@link decodeColumn}. */
export interface DecodeOptions {
  /**
   * Largest number of entries to accept; a column that decodes to more fails. Guards against columns
   * whose RLE blocks claim millions of entries.
   *
   * @defaultValue `Infinity`
   */
  readonly maxCount?: number;
}

/** Output collector: entries plus the limit check, kept in one place. */
class Output {
  readonly values: unknown[] = [];
  readonly max: number;
  constructor(max: number) {
    this.max = max;
  }
  push(v: unknown): void {
    if (this.values.length >= this.max) throw tooManyEntries(this.max);
    this.values.push(v);
  }
}

/**
 * Read a literal at `pos` into `state`.
 *
 * @returns the offset after the literal.
 */
function readLiteral(
  state: DecodingState,
  bytes: Uint8Array,
  view: DataView,
  pos: number,
  end: number,
): number {
  const type = bytes[pos] ?? 0;
  // Writers must use the empty field name; the server's decoder assumes a one-byte name.
  if (pos + 1 >= end || bytes[pos + 1] !== 0)
    throw invalidColumn(`literal without empty field name at offset ${pos}`);
  const size = elementValueSize(bytes, view, type, pos + 2, end);
  state.loadLiteral(bytes, view, type, pos + 2, size);
  return pos + 2 + size;
}

/**
 * Decode a BSONColumn binary.
 *
 * @param bytes - the BinData subtype 7 payload.
 * @param options - limits.
 * @returns one entry per element: the canonical value, or `undefined` for a missing entry.
 * @throws TimeseriesError (`BadValue`) for a malformed column.
 */
export function decodeColumn(bytes: Uint8Array, options: DecodeOptions = {}): unknown[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const end = bytes.length;
  const out = new Output(options.maxCount ?? Infinity);
  const state = new DecodingState();
  let pos = 0;
  for (;;) {
    state.drainInto(out.values, out.max);
    if (pos >= end) throw invalidColumn('missing final EOO');
    const b = bytes[pos] ?? 0;
    if (b === 0) {
      if (pos !== end - 1) throw invalidColumn('Final EOO found before reaching end of buffer');
      return out.values;
    }
    if (isInterleavedStartControlByte(b)) {
      pos = decodeInterleaved(bytes, view, pos, end, out, state);
    } else if (isLiteralControlByte(b)) {
      pos = readLiteral(state, bytes, view, pos, end);
      out.push(state.current());
    } else if (isSimple8bControlByte(b)) {
      pos = state.startControl(bytes, view, pos, end);
    } else {
      throw invalidColumn(`Invalid control byte 0x${b.toString(16)} at offset ${pos}`);
    }
  }
}

/**
 * Decode one interleaved section starting at `pos` (the start byte), then reset `regular` to continue
 * after it.
 *
 * @returns the offset after the section's terminating EOO.
 */
function decodeInterleaved(
  bytes: Uint8Array,
  view: DataView,
  pos: number,
  end: number,
  out: Output,
  regular: DecodingState,
): number {
  const startByte = bytes[pos] ?? 0;
  const schema = parseReference(bytes, view, pos + 1, end, startByte);
  const leaves = schema.leaves;
  const states = leaves.map((leaf) => {
    const s = new DecodingState();
    s.loadLiteral(bytes, view, leaf.type, leaf.pos, leaf.size);
    return s;
  });
  const values: unknown[] = new Array<unknown>(states.length).fill(undefined);
  const rootType = startByte === kInterleavedStartArray ? BsonType.array : BsonType.object;
  let last: unknown = undefined;
  let p = pos + 1 + schema.size;
  for (;;) {
    for (const [i, s] of states.entries()) {
      if (s.hasNext()) {
        values[i] = s.next();
        continue;
      }
      if (p >= end) throw invalidColumn('interleaved section not terminated');
      const b = bytes[p] ?? 0;
      if (b === 0) {
        if (i !== 0) throw invalidColumn(`interleaved section ended inside an entry at offset ${p}`);
        for (const other of states) {
          if (other.hasNext())
            throw invalidColumn(`interleaved stream has values left at section end (offset ${p})`);
        }
        regular.loadObject(last, rootType);
        return p + 1;
      }
      if (isLiteralControlByte(b)) {
        p = readLiteral(s, bytes, view, p, end);
        values[i] = s.current();
      } else if (isSimple8bControlByte(b)) {
        p = s.startControl(bytes, view, p, end);
        values[i] = s.next();
      } else if (isInterleavedStartControlByte(b)) {
        throw invalidColumn(`nested interleaved start at offset ${p}`);
      } else {
        throw invalidColumn(`Invalid control byte 0x${b.toString(16)} at offset ${p}`);
      }
    }
    const entry = buildEntry(schema.root, values);
    out.push(entry);
    if (entry !== undefined) last = entry;
  }
}
