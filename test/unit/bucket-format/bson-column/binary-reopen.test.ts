import { Long, MinKey, ObjectId, Timestamp } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { reopenPoint, resumeRegular64 } from '../../../../src/bucket-format/bson-column/binary-reopen.js';
import { BSONColumn } from '../../../../src/bucket-format/bson-column/bson-column.js';
import { ElementWriter } from '../../../../src/bucket-format/bson-column/bson-element.js';
import { ByteWriter } from '../../../../src/bucket-format/bson-column/byte-writer.js';
import { EncodingState } from '../../../../src/bucket-format/bson-column/encoding-state.js';
import { toHex } from './vectors.js';

/** Entries of one 64-bit unscaled type with runs (RLE), steps, jumps and missing entries. */
const column64: fc.Arbitrary<unknown[]> = fc
  .tuple(
    fc.constantFrom('int32', 'long', 'date', 'timestamp', 'oid', 'bool', 'null', 'minKey'),
    fc.array(
      fc.tuple(
        fc.integer({ min: -3, max: 3 }),
        fc.nat({ max: 400 }),
        fc.nat({ max: 9 }),
        fc.oneof(fc.constant(0), fc.nat({ max: 400 })),
      ),
      {
        maxLength: 6,
      },
    ),
    fc.integer({ min: 0, max: 2 ** 30 }),
  )
  .map(([kind, runs, start]) => {
    const out: unknown[] = [];
    let x = start;
    let step = 0;
    for (const [dd, n, gap, missingRun] of runs) {
      for (let i = 0; i < missingRun; i++) out.push(undefined);
      step += dd * (dd % 2 === 0 ? 1 : 1000);
      for (let i = 0; i < n; i++) {
        x += step;
        if (gap > 0 && i % (gap * 29 + 3) === 0) {
          out.push(undefined);
          continue;
        }
        switch (kind) {
          case 'int32':
            out.push(x | 0);
            break;
          case 'long':
            out.push(Long.fromNumber(x * 1000));
            break;
          case 'date':
            out.push(new Date(1.6e12 + x));
            break;
          case 'timestamp':
            out.push(new Timestamp({ t: 1000 + (x >>> 12), i: x & 0xfff }));
            break;
          case 'oid':
            out.push(ObjectId.createFromTime(1.7e9 + (x >>> 10)));
            break;
          case 'bool':
            out.push((x & 4) === 0);
            break;
          case 'null':
            out.push(null);
            break;
          default:
            out.push(new MinKey());
        }
      }
    }
    return out;
  });

function appendTo(state: EncodingState, el: ElementWriter, v: unknown): void {
  if (v === undefined) {
    state.skip();
    return;
  }
  el.write(v);
  state.append(el.type, el.bytes, el.start, el.end);
}

describe('resumeRegular64', () => {
  it('rebuilds the exact encoder state from the slots: flushing it and appending more give the one-shot bytes', () => {
    fc.assert(
      fc.property(column64, fc.nat(), (values, cut) => {
        // Arrange: the first k values stored
        const k = cut % (values.length + 1);
        const stored = BSONColumn.encode(values.slice(0, k));
        const out = new ByteWriter();
        const state = new EncodingState(out);
        const el = new ElementWriter();
        // Act: resume, append the rest, flush
        const base = resumeRegular64(stored, reopenPoint(stored), state, out);
        for (const v of values.slice(k)) appendTo(state, el, v);
        state.flush();
        out.u8(0);
        // Assert: the resume point was used (never the fallback), and the bytes are the one-shot bytes
        expect(base).toBeGreaterThanOrEqual(0);
        const column = new Uint8Array(base + out.length);
        column.set(stored.subarray(0, base));
        column.set(out.buf.subarray(0, out.length), base);
        expect(toHex(column)).toBe(toHex(BSONColumn.encode(values)));
      }),
      { numRuns: 800 },
    );
  }, 120_000);

  it('resumes a run of dates at its RLE block, with the blocks before it as the open control', () => {
    const dates = Array.from({ length: 1000 }, (_, i) => new Date(1.6e12 + i * 1000));
    const stored = BSONColumn.encode(dates);
    const out = new ByteWriter();
    const base = resumeRegular64(stored, reopenPoint(stored), new EncodingState(out), out);
    // 09 00 <date>, then a control at 10: a block [+1000, 0, ...] and RLE blocks of zeros
    expect((stored[10] ?? 0) >> 4).toBe(0x8);
    expect(base).toBe(10);
    expect(out.length).toBe(1 + 8);
    expect(toHex(out.buf.subarray(1, 9))).toBe(toHex(stored.subarray(11, 19)));
  });

  it('declines doubles and 128-bit types', () => {
    for (const values of [
      [1.5, 2.5],
      ['a', 'b'],
    ]) {
      const stored = BSONColumn.encode(values);
      expect(resumeRegular64(stored, 0, new EncodingState(new ByteWriter()), new ByteWriter())).toBe(-1);
    }
  });
});
