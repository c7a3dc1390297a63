import { Binary, Decimal128, Long } from 'bson';
import { describe, expect, it } from 'vitest';

import { applyBinaryDiff } from '../../../../src/bucket-format/bson-column/binary-diff.js';
import type { BinaryDiff } from '../../../../src/bucket-format/bson-column/binary-diff.js';
import { BSONColumn, BSONColumnBuilder } from '../../../../src/bucket-format/bson-column/bson-column.js';
import { cloneCanonical } from '../../../../src/bucket-format/bson-column/bson-element.js';
import { InternalInvariantError, TimeseriesError } from '../../../../src/errors.js';
import { fromHex, legacyF0, toHex } from './vectors.js';

const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64');
const at = (s: number): Date => new Date(Date.UTC(2022, 5, 6, 15, 34, s));

describe('BSONColumnBuilder: MongoDB 8 binary diffs', () => {
  // The server's unit test MakeTimeseriesCompressedDiffUpdateOp (timeseries_write_util_test.cpp): a
  // compressed bucket of 3 measurements reopened from its columns, 2 more appended (sorted by time), and
  // the expected `sdata.b` section of the update.
  it('reproduces the server diff of appending 2 measurements to a reopened 3-measurement bucket', () => {
    // Arrange: the stored columns, written in one go
    const storedTime = BSONColumn.encode([at(31), at(32), at(33)]);
    const storedA = BSONColumn.encode([1, 2, 3]);
    // Act
    const time = BSONColumnBuilder.fromBinary(storedTime);
    time.append(at(30));
    time.append(at(34));
    const a = BSONColumnBuilder.fromBinary(storedA);
    a.append(0);
    a.append(4);
    const timeDiff = time.intermediate();
    const aDiff = a.intermediate();
    // Assert: {time: {o: 10, d: BinData(0, "gAt9AAD8fGBtAA==")}, a: {o: 6, d: BinData(0, "gCsAEAAUABAAAA==")}}
    expect(timeDiff.offset).toBe(10);
    expect(base64(timeDiff.bytes)).toBe('gAt9AAD8fGBtAA==');
    expect(aDiff.offset).toBe(6);
    expect(base64(aDiff.bytes)).toBe('gCsAEAAUABAAAA==');
    expect(BSONColumn.decode(applyBinaryDiff(storedTime, timeDiff))).toEqual([
      at(31),
      at(32),
      at(33),
      at(30),
      at(34),
    ]);
    expect(BSONColumn.decode(applyBinaryDiff(storedA, aDiff))).toEqual([1, 2, 3, 0, 4]);
  });

  it('returns the whole binary at offset 0 on the first call, the EOO alone for an empty column', () => {
    const empty = new BSONColumnBuilder().intermediate();
    expect(empty.offset).toBe(0);
    expect(toHex(empty.bytes)).toBe('00');
    const builder = new BSONColumnBuilder();
    for (const v of [1, 2, 3, 4]) builder.append(v);
    const first = builder.intermediate();
    expect(first.offset).toBe(0);
    expect(toHex(first.bytes)).toBe('1000010000008' + '02c00000200200000' + '00');
  });

  it('re-sends from the open control byte: after a literal with pending values only, from its end', () => {
    // int32 [1,2,3,4]: a 6-byte literal, then 3 pending deltas and no block written yet
    const builder = new BSONColumnBuilder();
    for (const v of [1, 2, 3, 4]) builder.append(v);
    let column = applyBinaryDiff(new Uint8Array(0), builder.intermediate());
    builder.append(5);
    const diff = builder.intermediate();
    expect(diff.offset).toBe(6);
    column = applyBinaryDiff(column, diff);
    expect(toHex(column)).toBe(toHex(BSONColumn.encode([1, 2, 3, 4, 5])));
  });

  it('keeps every diff of a scalar column within two control items and the EOO', () => {
    const sequences: ReadonlyArray<(i: number) => unknown> = [
      (i) => new Date(1e12 + i * 1000 + (i % 13 === 0 ? 7 : 0)),
      (i) => (i * 7919) % 1000,
      (i) => Math.round(Math.sin(i) * 1000) / 100,
      (i) => Math.sin(i),
      (i) => `s${String(i % 50)}`,
    ];
    for (const valueAt of sequences) {
      const builder = new BSONColumnBuilder();
      let column: Uint8Array = new Uint8Array(0);
      const values: unknown[] = [];
      for (let i = 0; i < 2000; i++) {
        values.push(valueAt(i));
        builder.append(values[i]);
        const diff: BinaryDiff = builder.intermediate();
        if (i > 0) expect(diff.bytes.length).toBeLessThanOrEqual(2 * (1 + 16 * 8) + 1);
        column = applyBinaryDiff(column, diff);
      }
      expect(toHex(column)).toBe(toHex(BSONColumn.encode(values)));
    }
  });

  it('hands out diffs that later calls never change, and a whole-column diff with its own buffer', () => {
    // Arrange: many small diffs, kept until the end (they share buffers)
    const builder = new BSONColumnBuilder();
    const values: number[] = [];
    const diffs: BinaryDiff[] = [];
    for (let i = 0; i < 5000; i++) {
      values.push(Math.round(Math.sin(i) * 1000) / 100);
      builder.append(values[i]);
      diffs.push(builder.intermediate());
    }
    // Act
    const column = diffs.reduce(applyBinaryDiff, new Uint8Array(0));
    // Assert
    expect(toHex(column)).toBe(toHex(BSONColumn.encode(values)));
    const first = diffs[0];
    expect(first?.bytes.byteLength).toBe(first?.bytes.buffer.byteLength);
  });

  it('refuses finalize() once intermediate() has dropped the final bytes', () => {
    const builder = new BSONColumnBuilder();
    builder.append(1);
    builder.append('x');
    builder.intermediate();
    builder.append(2);
    expect(() => builder.finalize()).toThrow(InternalInvariantError);
  });
});

describe('BSONColumnBuilder.size', () => {
  it('is the length the binary would have if finalized now, pending values included', () => {
    const builder = new BSONColumnBuilder();
    const values: unknown[] = [];
    for (let i = 0; i < 300; i++) {
      values.push(i % 17 === 0 ? undefined : i * 3);
      builder.append(values[i]);
      expect(builder.size).toBe(BSONColumn.encode(values).length);
    }
  });
});

describe('BSONColumnBuilder.fromBinary', () => {
  it('rewrites a column it would not have encoded the same way from the first differing point', () => {
    // A legacy F0 section: a current encoder writes F1, so the first diff replaces the whole column.
    const stored = fromHex(legacyF0.hex);
    const builder = BSONColumnBuilder.fromBinary(stored);
    builder.append({ a: [10], b: 20 });
    const diff = builder.intermediate();
    expect(diff.offset).toBe(0);
    const column = applyBinaryDiff(stored, diff);
    expect(toHex(column)).toBe(toHex(BSONColumn.encode([...legacyF0.values, { a: [10], b: 20 }])));
  });

  it('resumes an empty column', () => {
    const builder = BSONColumnBuilder.fromBinary(Uint8Array.of(0));
    builder.append(7);
    expect(toHex(applyBinaryDiff(Uint8Array.of(0), builder.intermediate()))).toBe(
      toHex(BSONColumn.encode([7])),
    );
  });

  it('rejects malformed binaries with BadValue', () => {
    for (const hex of ['', '10 00 01000000', '10 00 01000000 00 00', 'e5 00']) {
      expect(() => BSONColumnBuilder.fromBinary(fromHex(hex))).toThrow(TimeseriesError);
    }
  });
});

describe('applyBinaryDiff', () => {
  it('rejects an offset past the end of the binary', () => {
    expect(() => applyBinaryDiff(Uint8Array.of(0), { offset: 2, bytes: Uint8Array.of(0) })).toThrow(
      TimeseriesError,
    );
  });
});

describe('decoded values own their bytes', () => {
  it('does not change when the column it was decoded from is patched in place (Buffer input)', () => {
    // Arrange: a column held in a Node Buffer, as the driver returns a Binary's bytes
    const values = [new Binary(Uint8Array.of(1, 2, 3, 4), 0), Decimal128.fromString('1.5')];
    const column = Buffer.from(BSONColumn.encode(values));
    const decoded = BSONColumn.decode(column);
    // Act: the storage reuses the memory
    column.fill(0xee);
    // Assert
    expect(decoded).toEqual(values);
  });

  it('a deep copy of a Buffer-backed Binary does not share its memory', () => {
    const memory = Buffer.from([1, 2, 3]);
    const original = new Binary(memory, 0);
    const copy = cloneCanonical(original) as Binary;
    memory.fill(9);
    expect(Array.from(copy.buffer)).toEqual([1, 2, 3]);
  });
});

describe('Simple-8b state after a literal', () => {
  it('packs the values after a literal as a new builder would, whatever ruled a type out before it', () => {
    // Deltas of 2^62 (zigzag 2^63) need a trailing-zero selector: the base selector is ruled out for them,
    // including right before an RLE run of them that is flushed by the next literal.
    const tail = '10 00 01000000 80 2c00000200200000 00';
    for (let n = 1; n <= 300; n++) {
      const longs = Array.from({ length: n }, (_, k) => Long.fromBigInt(BigInt.asIntN(64, BigInt(k) << 62n)));
      const bytes = toHex(BSONColumn.encode([...longs, 1, 2, 3, 4]));
      expect(bytes.endsWith(tail.replace(/ /g, ''))).toBe(true);
    }
  });
});
