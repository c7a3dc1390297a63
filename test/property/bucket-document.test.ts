/**
 * Laws of version-1 bucket documents (issue 2): the document built whole from all measurements equals the
 * first commit's document with every later commit's update applied (through MemoryStorage, i.e. mingo's
 * updater), byte for byte as BSON (so field order and BSON types are included); every time lies in the
 * bucket window and the `_id` timestamp is the rounded start.
 */
import { Decimal128, Double, Int32, Long, ObjectId, serialize } from 'bson';
import fc from 'fast-check';
import { update as applyUpdate } from 'mingo/updater';
import { describe, expect, it } from 'vitest';

import {
  bucketUpdateDocument,
  makeBucketUpdate,
  makeNewBucketDocument,
} from '../../src/bucket-format/bucket-document.js';
import { BucketIdGenerator } from '../../src/bucket-format/bucket-oid.js';
import {
  createMinMax,
  maxDocument,
  minDocument,
  takeUpdates,
  updateMinMax,
} from '../../src/bucket-format/min-max.js';
import { roundTimestampBySeconds } from '../../src/bucket-format/time-rounding.js';
import { MemoryStorage } from '../../src/storage/memory-storage.js';
import { applySetFieldPipeline } from '../../src/storage/set-field-pipeline.js';

const scalar = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map((n) => new Int32(n)),
  fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }).map((n) => Long.fromBigInt(n)),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => new Double(d)),
  fc.integer({ min: -100, max: 100 }).map((n) => Decimal128.fromString(String(n))),
  fc.integer({ min: 0, max: 2 ** 40 }).map((ms) => new Date(ms)),
  fc.uint8Array({ minLength: 12, maxLength: 12 }).map((b) => new ObjectId(b)),
  fc.string({ maxLength: 6 }),
  fc.boolean(),
  fc.constant(null),
);
const fieldName = fc.constantFrom('a', 'b', 'c', '__proto__', 'x.y', '$d', 'constructor');
const value = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('object'), tie('array')),
  object: fc.dictionary(fc.constantFrom('p', 'q', '__proto__'), tie('value'), { maxKeys: 3 }),
  array: fc.array(tie('value'), { maxLength: 3 }),
})).value;

const measurementArb = fc
  .tuple(fc.integer({ min: 0, max: 3_599_999 }), fc.dictionary(fieldName, value, { maxKeys: 4 }))
  .map(([offset, fields]) => {
    const m: Record<string, unknown> = {};
    Object.defineProperty(m, 't', {
      value: new Date(Date.UTC(2024, 0, 1) + offset),
      enumerable: true,
      writable: true,
    });
    for (const [k, v] of Object.entries(fields)) {
      Object.defineProperty(m, k, { value: v, enumerable: true, writable: true, configurable: true });
    }
    return m;
  });

/** Split `items` into consecutive non-empty chunks at the given cut points. */
function chunks<T>(items: ReadonlyArray<T>, cuts: ReadonlyArray<number>): T[][] {
  const points = [...new Set(cuts.map((c) => 1 + (c % Math.max(1, items.length - 1))))].sort((a, b) => a - b);
  const out: T[][] = [];
  let start = 0;
  for (const p of [...points, items.length]) {
    if (p > start && p <= items.length) {
      out.push(items.slice(start, p));
      start = p;
    }
  }
  return out;
}

describe('version-1 bucket document', () => {
  it('first commit + successive updates == document built whole (BSON bytes)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(measurementArb, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 5 }),
        async (measurements, cuts) => {
          // Arrange
          const id = new BucketIdGenerator(new Uint8Array(8)).next(0);
          const start = roundTimestampBySeconds((measurements[0]!.t as Date).getTime(), 60);
          const seed = { t: new Date(start) };
          const whole = createMinMax();
          updateMinMax(whole, seed, { skipField: undefined });
          for (const m of measurements) updateMinMax(whole, m, { skipField: undefined });
          const expected = makeNewBucketDocument({
            id,
            hasMeta: true,
            normalizedMeta: 'm',
            min: minDocument(whole),
            max: maxDocument(whole),
            measurements,
            metaField: undefined,
          });

          // Act: commit chunk by chunk through the storage's update path.
          const storage = new MemoryStorage();
          const mm = createMinMax();
          updateMinMax(mm, seed, { skipField: undefined });
          const parts = chunks(measurements, cuts);
          const first = parts[0]!;
          for (const m of first) updateMinMax(mm, m, { skipField: undefined });
          takeUpdates(mm);
          const firstDoc = makeNewBucketDocument({
            id,
            hasMeta: true,
            normalizedMeta: 'm',
            min: minDocument(mm),
            max: maxDocument(mm),
            measurements: first,
            metaField: undefined,
          });
          await storage.insertOne('ns', firstDoc as unknown as Record<string, unknown>);
          // The same commits applied to a second copy through the update documents themselves (mingo's
          // updater for $set, the $setField evaluator for pipelines), as another storage would.
          const viaDocuments = makeNewBucketDocument({
            id,
            hasMeta: true,
            normalizedMeta: 'm',
            min: minDocument(mm),
            max: maxDocument(mm),
            measurements: first,
            metaField: undefined,
          }) as unknown as Record<string, unknown>;
          const columns = new Set(Object.keys(firstDoc.data));
          let committed = first.length;
          for (const part of parts.slice(1)) {
            for (const m of part) updateMinMax(mm, m, { skipField: undefined });
            const changes = takeUpdates(mm);
            const update = makeBucketUpdate({
              measurements: part,
              numPreviouslyCommittedMeasurements: committed,
              existingColumns: columns,
              minUpdates: changes.min,
              maxUpdates: changes.max,
              metaField: undefined,
            });
            const commit = {
              bucketId: id,
              timeField: 't',
              numPreviouslyCommittedMeasurements: committed,
              update,
            };
            const result = await storage.applyCommit('ns', commit);
            expect(result.kind).toBe('updated');
            const document = bucketUpdateDocument(update);
            expect(Array.isArray(document)).toBe(update.kind === 'pipeline');
            if (update.kind === 'pipeline') {
              applySetFieldPipeline(
                viaDocuments,
                document as ReadonlyArray<Readonly<Record<string, unknown>>>,
              );
            } else {
              // mingo's copying drops own `__proto__` keys inside values; the values are not mutated.
              applyUpdate(viaDocuments, document as Record<string, unknown>, undefined, undefined, {
                cloneMode: 'none',
              });
            }
            // The guard matches exactly the document before this commit, and no longer after it.
            expect(await storage.applyCommit('ns', commit)).toEqual({ kind: 'notMatched' });
            for (const c of update.newColumns) columns.add(c);
            committed += part.length;
          }
          const [stored] = await (async () => {
            const out = [];
            for await (const d of storage.find('ns', {})) out.push(d);
            return out;
          })();

          // Assert
          const expectedHex = Buffer.from(serialize(expected as unknown as Record<string, unknown>)).toString(
            'hex',
          );
          expect(Buffer.from(serialize(stored!)).toString('hex')).toBe(expectedHex);
          expect(Buffer.from(serialize(viaDocuments)).toString('hex')).toBe(expectedHex);
          expect(Object.getPrototypeOf(stored!.data)).toBe(Object.prototype);
          expect(({} as Record<string, unknown>).p).toBeUndefined();
        },
      ),
      { numRuns: 400 },
    );
  });

  it('every time lies in the window [start, start + span) and the _id timestamp is the start', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -(2 ** 40), max: 2 ** 41 }),
        fc.constantFrom(60, 3600, 86400, 7),
        (t, rounding) => {
          const start = roundTimestampBySeconds(t, rounding);
          expect(start).toBeLessThanOrEqual(t);
          expect(t - start).toBeLessThan(rounding * 1000);
          expect(start % (rounding * 1000) === 0).toBe(true);
          const id = new BucketIdGenerator().next(start);
          expect(id.getTimestamp().getTime()).toBe((Math.floor(start / 1000) >>> 0) * 1000);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
