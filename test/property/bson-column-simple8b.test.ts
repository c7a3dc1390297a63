/**
 * The 64-bit Simple-8b path works on two 32-bit halves instead of bigints (for speed). These properties
 * check it against the bigint code it replaced: the bigint builder (still used for 128-bit streams) and
 * the bigint formulas of zigzag, wrapping arithmetic and double scaling.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { Simple8bReader } from '../../src/bucket-format/bson-column/simple8b.js';
import { Simple8bBuilder, Simple8bBuilder64 } from '../../src/bucket-format/bson-column/simple8b-builder.js';
import {
  decodeDouble,
  encodeDouble,
  kMemoryAsInteger,
  mayEncodeAtSmallerScale,
  kScaleMultipliers,
  unzigzag64,
  zigzagDelta64,
  zigzagNumber,
} from '../../src/bucket-format/bson-column/simple8b-type-util.js';
import type { Int64Halves } from '../../src/util/int64.js';
import {
  add64,
  int64ToBigInt,
  int64ToNumber,
  numberToInt64,
  sub64,
  wrapInt64,
  wrapUint64,
} from '../../src/util/int64.js';

const lo = (v: bigint): number => Number(v & 0xffffffffn);
const hi = (v: bigint): number => Number((v >> 32n) & 0xffffffffn);
const u64 = (h: Int64Halves): bigint => (BigInt(h.hi) << 32n) | BigInt(h.lo);

/** Unsigned 64-bit values shaped like Simple-8b input: small, with trailing zeros, near the limits. */
const value64: fc.Arbitrary<bigint> = fc.oneof(
  fc.bigInt({ min: 0n, max: 15n }),
  fc.bigInt({ min: 0n, max: 1n << 20n }),
  fc
    .tuple(fc.bigInt({ min: 1n, max: 1n << 16n }), fc.nat({ max: 63 }))
    .map(([v, s]) => wrapUint64(v << BigInt(s))),
  fc
    .tuple(fc.bigInt({ min: 1n, max: 3n }), fc.constantFrom(13, 14, 15, 16, 56, 59, 60, 61, 62))
    .map(([v, s]) => wrapUint64(v << BigInt(s))),
  fc.bigInt({ min: (1n << 59n) - 2n, max: (1n << 60n) + 2n }),
  fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
  fc.constantFrom((1n << 64n) - 1n, (1n << 64n) - 2n, 1n << 63n),
);

/** Values below 2^32, as the encoder's runs of small double deltas give `appendFitting`. */
const value32: fc.Arbitrary<number> = fc.oneof(
  fc.nat({ max: 15 }),
  fc.nat({ max: 1 << 20 }),
  fc.tuple(fc.integer({ min: 1, max: 1 << 10 }), fc.nat({ max: 21 })).map(([v, s]) => (v << s) >>> 0),
  fc.constantFrom(0, 2, 0xffffffff, 0x80000000, 2 ** 31 - 1),
);

type Op =
  | { readonly kind: 'append'; readonly value: bigint; readonly times: number }
  | { readonly kind: 'fitting'; readonly values: ReadonlyArray<number> }
  | { readonly kind: 'skip'; readonly times: number }
  | { readonly kind: 'flush' }
  | { readonly kind: 'literal' };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      value: value64,
      times: fc.constantFrom(1, 1, 1, 2, 130, 300),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('skip' as const), times: fc.constantFrom(1, 2, 150) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('fitting' as const),
      // Runs of one value too: blocks of equal values, where RLE may start.
      values: fc.oneof(
        fc.array(value32, { maxLength: 40 }),
        fc.tuple(value32, fc.integer({ min: 1, max: 200 })).map(([v, n]) => new Array<number>(n).fill(v)),
      ),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'flush' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'literal' as const }) },
);

/** Append `values` (below 2^32) by appendFitting, and each value it stops at by append. */
function appendByFitting(b: Simple8bBuilder64, values: ReadonlyArray<number>): void {
  const int32s = Int32Array.from(values, (v) => v | 0);
  for (let at = 0; at < int32s.length;) {
    at = b.appendFitting(int32s, at, int32s.length);
    if (at < int32s.length) expect(b.append((int32s[at++] as number) >>> 0, 0)).toBe(true);
  }
}

describe('Simple8bBuilder64 writes what the bigint Simple8bBuilder writes', () => {
  it('same blocks, entries, delta sums, return values and state for any sequence of operations', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), fc.boolean(), (ops, trackSum) => {
        // Arrange
        const expected: string[] = [];
        const actual: string[] = [];
        const reference = new Simple8bBuilder(
          {
            writeBlock: (word, entries, sum) => expected.push(`${word}/${entries}/${wrapUint64(sum)}`),
          },
          false,
        );
        const fast = new Simple8bBuilder64({
          // The halves come as int32s: their unsigned values first.
          writeBlock64: (wlo, whi, entries, slo, shi) =>
            actual.push(
              `${u64({ lo: wlo >>> 0, hi: whi >>> 0 })}/${entries}/${u64({ lo: slo >>> 0, hi: shi >>> 0 })}`,
            ),
        });
        reference.trackSum = trackSum;
        fast.trackSum = trackSum;
        const pending: Int64Halves = { lo: 0, hi: 0 };
        // Act / Assert: after each operation, the outputs and the observable state agree.
        for (const o of ops) {
          if (o.kind === 'flush') {
            reference.flush();
            fast.flush();
          } else if (o.kind === 'literal') {
            reference.flush();
            fast.flush();
            reference.resetAfterLiteral();
            fast.resetAfterLiteral();
          } else if (o.kind === 'fitting') {
            // The values one by one into the reference; into the fast builder by appendFitting, and each
            // value it stops at by append.
            for (const v of o.values) expect(reference.append(BigInt(v))).toBe(true);
            appendByFitting(fast, o.values);
          } else {
            for (let i = 0; i < o.times; i++) {
              if (o.kind === 'skip') {
                reference.skip();
                fast.skip();
              } else {
                expect(fast.append(lo(o.value), hi(o.value))).toBe(reference.append(o.value));
              }
            }
          }
          expect(actual).toEqual(expected);
          expect(fast.blocksWritten).toBe(reference.blocksWritten);
          expect(fast.pendingCount).toBe(reference.pendingCount);
          expect(fast.rleCount).toBe(reference.rleCount);
          expect(u64({ lo: fast.lastWrittenLo, hi: fast.lastWrittenHi })).toBe(
            wrapUint64(reference.lastWritten),
          );
          for (let i = 0; i < fast.pendingCount + fast.rleCount; i++) {
            const ref = i < reference.pendingCount ? reference.pendingAt(i) : reference.lastForRle;
            const present = fast.pendingAt(i, pending);
            expect(present ? u64(pending) : -1n).toBe(ref);
          }
        }
        reference.flush();
        fast.flush();
        expect(actual).toEqual(expected);
      }),
      { numRuns: 600 },
    );
  });

  it('replaysUnchanged: a builder reset from it and given its pending values again is the same builder', () => {
    const apply = (b: Simple8bBuilder64, o: Op): void => {
      if (o.kind === 'flush') b.flush();
      else if (o.kind === 'literal') {
        b.flush();
        b.resetAfterLiteral();
      } else if (o.kind === 'fitting') appendByFitting(b, o.values);
      else {
        for (let i = 0; i < o.times; i++) {
          if (o.kind === 'skip') b.skip();
          else b.append(lo(o.value), hi(o.value));
        }
      }
    };
    // Few distinct values, long runs, and the unstorable 2^64 - 1 (which ends RLE without being stored):
    // the states where RLE and the pending values interact.
    const runOp: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 8,
        arbitrary: fc.record({
          kind: fc.constant('append' as const),
          value: fc.constantFrom(0n, 0n, 1n, 5n, 1n << 40n, (1n << 64n) - 1n),
          times: fc.constantFrom(1, 1, 2, 5, 119, 121, 125, 250),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({ kind: fc.constant('skip' as const), times: fc.constantFrom(1, 2, 125) }),
      },
      { weight: 1, arbitrary: fc.constant({ kind: 'flush' as const }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'literal' as const }) },
    );
    const ops = fc.array(fc.oneof(op, runOp), { maxLength: 40 });
    fc.assert(
      fc.property(ops, ops, (before, after) => {
        // Arrange: a builder in some state that claims a replay leaves it unchanged.
        const written: string[] = [];
        const original = new Simple8bBuilder64({
          writeBlock64: (wlo, whi, entries, slo, shi) =>
            written.push(`${wlo}/${whi}/${entries}/${slo}/${shi}`),
        });
        original.trackSum = true;
        for (const o of before) apply(original, o);
        fc.pre(original.replaysUnchanged);
        const replayed: string[] = [];
        const replaySink = {
          writeBlock64: (wlo: number, whi: number, entries: number, slo: number, shi: number) =>
            replayed.push(`${wlo}/${whi}/${entries}/${slo}/${shi}`),
        };
        const replay = new Simple8bBuilder64(replaySink).reset(replaySink, true, original);
        // Act: replay the pending values, then continue both the same way.
        const v: Int64Halves = { lo: 0, hi: 0 };
        for (let i = 0; i < original.pendingCount; i++) {
          if (original.pendingAt(i, v)) replay.append(v.lo, v.hi);
          else replay.skip();
        }
        const mark = written.length;
        expect(replayed).toEqual([]);
        for (const o of after) {
          apply(original, o);
          apply(replay, o);
        }
        original.flush();
        replay.flush();
        // Assert
        expect(replayed).toEqual(written.slice(mark));
        expect(replay.blocksWritten).toBe(original.blocksWritten);
      }),
      { numRuns: 3000 },
    );
  });

  it('Simple8bReader reads back every value and skip the builder wrote', () => {
    fc.assert(
      fc.property(fc.array(fc.option(value64, { nil: undefined }), { maxLength: 400 }), (values) => {
        // Arrange: encode, keeping only the values Simple-8b can store.
        const words: Array<[number, number]> = [];
        const builder = new Simple8bBuilder64({ writeBlock64: (wlo, whi) => words.push([wlo, whi]) });
        const stored: Array<bigint | undefined> = [];
        for (const v of values) {
          if (v === undefined) builder.skip();
          else if (!builder.append(lo(v), hi(v))) continue;
          stored.push(v);
        }
        builder.flush();
        const bytes = new Uint8Array(words.length * 8);
        const view = new DataView(bytes.buffer);
        words.forEach(([wlo, whi], i) => {
          view.setUint32(i * 8, wlo, true);
          view.setUint32(i * 8 + 4, whi, true);
        });
        // Act
        const reader = new Simple8bReader();
        const read: Array<bigint | undefined> = [];
        for (let b = 0; b < words.length; b += 16) {
          reader.start(bytes, view, b * 8, Math.min(16, words.length - b));
          while (reader.hasNext()) read.push(reader.next() ? u64(reader) : undefined);
        }
        // Assert
        expect(read).toEqual(stored);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('int64 halves arithmetic matches bigint arithmetic', () => {
  const int64 = fc.oneof(
    fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }),
    fc.bigInt({ min: -1000n, max: 1000n }),
    fc.constantFrom(-(1n << 63n), (1n << 63n) - 1n, -1n, 0n, 1n << 32n, (1n << 32n) - 1n),
  );
  const out: Int64Halves = { lo: 0, hi: 0 };

  it('add64, sub64, zigzagDelta64, unzigzag64, int64ToNumber, int64ToBigInt', () => {
    fc.assert(
      fc.property(int64, int64, (a, b) => {
        add64(lo(a), hi(a), lo(b), hi(b), out);
        expect(int64ToBigInt(out.lo, out.hi)).toBe(wrapInt64(a + b));
        sub64(lo(a), hi(a), lo(b), hi(b), out);
        expect(int64ToBigInt(out.lo, out.hi)).toBe(wrapInt64(a - b));
        const d = wrapInt64(a - b);
        zigzagDelta64(lo(a), hi(a), lo(b), hi(b), out);
        expect(u64(out)).toBe(wrapUint64((d << 1n) ^ (d >> 63n)));
        zigzagDelta64(lo(a), hi(a), 0, 0, out);
        expect(u64(out)).toBe(wrapUint64((a << 1n) ^ (a >> 63n)));
        const z = u64(out);
        unzigzag64(out.lo, out.hi, out);
        expect(int64ToBigInt(out.lo, out.hi)).toBe(wrapInt64((z >> 1n) ^ -(z & 1n)));
        expect(int64ToNumber(lo(a), hi(a))).toBe(Number(a));
      }),
      { numRuns: 3000 },
    );
  });

  it('zigzagNumber and numberToInt64 on exact numbers', () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), (d) => {
        zigzagNumber(d, out);
        const b = BigInt(d);
        expect(u64(out)).toBe(wrapUint64((b << 1n) ^ (b >> 63n)));
        numberToInt64(d, out);
        expect(int64ToBigInt(out.lo, out.hi)).toBe(b);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('double scaling on halves matches the bigint formulas', () => {
  // The bigint formulas of §3.2 the codec used before.
  const f64 = new Float64Array(1);
  const i64 = new BigInt64Array(f64.buffer);
  function referenceEncode(x: number, scaleIndex: number): bigint | undefined {
    if (scaleIndex === kMemoryAsInteger) {
      f64[0] = x;
      return i64[0];
    }
    const m = kScaleMultipliers[scaleIndex] ?? 1;
    const y = x * m;
    if (!(y >= -(2 ** 53) && y <= 2 ** 53)) return undefined;
    const r = (y < 0 ? -Math.round(-y) : Math.round(y)) + 0;
    return Object.is(r / m, x) ? BigInt(r) : undefined;
  }
  const double = fc.oneof(
    fc.double(),
    fc.integer({ min: -1e9, max: 1e9 }).map((x) => x / 100),
    fc.integer({ min: -1e9, max: 1e9 }).map((x) => x / 1e8),
    fc.constantFrom(2 ** 53, -(2 ** 53), 2 ** 53 + 2, 0.1, -0, NaN, Infinity),
  );

  it('encodeDouble and decodeDouble', () => {
    const out: Int64Halves = { lo: 0, hi: 0 };
    fc.assert(
      fc.property(double, fc.nat({ max: 5 }), (x, scale) => {
        const expected = referenceEncode(x, scale);
        const ok = encodeDouble(x, scale, out);
        expect(ok ? int64ToBigInt(out.lo, out.hi) : undefined).toBe(expected);
        if (expected !== undefined) {
          const back = decodeDouble(out.lo, out.hi, scale);
          const reference =
            scale === kMemoryAsInteger ? x : Number(expected) / (kScaleMultipliers[scale] ?? 1);
          expect(Object.is(back, reference) || (Number.isNaN(back) && Number.isNaN(reference))).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('mayEncodeAtSmallerScale: a value it clears is encoded by no smaller scale', () => {
    // Arrange: encoded values at scales 1 to 4, mostly int32 (the values it decides), near the int32
    // bounds, multiples of powers of ten plus one, and values beyond int32 whose low half alone would
    // mislead (3e9 is a multiple of ten; its low half as an int32 is not).
    const out: Int64Halves = { lo: 0, hi: 0 };
    const encodedValue = fc.oneof(
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.integer({ min: -99_999, max: 99_999 }),
      fc.constantFrom(2 ** 31 - 1, -(2 ** 31), 2 ** 31 - 10, -(2 ** 31) + 10, 1, -1, 5, -5),
      fc
        .tuple(fc.integer({ min: -21, max: 21 }), fc.constantFrom(10, 100, 1_000, 10_000, 1e8))
        .map(([k, p]) => k * p + 1),
      fc.integer({ min: -1e6, max: 1e6 }).map((k) => k * 1e4 + (k % 7 === 0 ? 3 : 0)),
      fc.constantFrom(3e9, -3e9, 2 ** 32 + 10, 2 ** 31, -(2 ** 31) - 10),
    );
    let cleared = 0;
    let encodedBelow = 0;
    fc.assert(
      fc.property(encodedValue, fc.integer({ min: 1, max: 4 }), (encoded, scale) => {
        // Act
        const halves: Int64Halves = { lo: 0, hi: 0 };
        numberToInt64(encoded, halves);
        const value = decodeDouble(halves.lo, halves.hi, scale);
        let smallest = scale;
        for (let i = scale - 1; i >= 0; i--) if (encodeDouble(value, i, out)) smallest = i;
        // Assert: the value is encoded at its scale as `encoded`, and cleared only when no smaller scale
        // encodes it.
        expect(encodeDouble(value, scale, out) && int64ToNumber(out.lo, out.hi) === encoded).toBe(true);
        if (!mayEncodeAtSmallerScale(halves.lo, halves.hi)) {
          cleared++;
          expect(smallest).toBe(scale);
        }
        if (smallest < scale) encodedBelow++;
      }),
      { numRuns: 3000 },
    );
    // Both outcomes were drawn.
    expect(cleared).toBeGreaterThan(0);
    expect(encodedBelow).toBeGreaterThan(0);
  });
});
