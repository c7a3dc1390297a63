import type { Binary } from 'bson';
import { calculateObjectSize, ObjectId, serialize } from 'bson';
import { describe, expect, it } from 'vitest';

import { BSONColumn } from '../../../src/bucket-format/bson-column/bson-column.js';
import {
  compressBucket,
  decompressBucket,
  decompressBucketSized,
} from '../../../src/bucket-format/bucket-compression.js';

const id = new ObjectId('66ffbfe8aabbccddee000001');
const t = (s: number): Date => new Date(Date.UTC(2024, 9, 4, 10, 14, s));

// Row i has time 10 * order[i] seconds and temperature 20 + order[i]: stored out of time order.
const order = [3, 1, 2, 0, 5, 4, 7, 6, 9, 8, 11, 10];
const rows = (f: (k: number) => unknown): Record<string, unknown> =>
  Object.fromEntries(order.map((k, i) => [String(i), f(k)]));

function v1Bucket(): Record<string, unknown> {
  return {
    _id: id,
    control: { version: 1, min: { time: t(0), temp: 20 }, max: { time: t(110), temp: 31 }, closed: false },
    meta: 'sensor-1',
    data: {
      temp: rows((k) => 20 + k),
      time: rows((k) => t(10 * k)),
      note: { '1': 'x' },
    },
  };
}
const sortedTimes = order.map((_, k) => t(10 * k));
const sortedTemps = order.map((_, k) => 20 + k);

// Delta-of-delta [+10000, 0 x 10]: selector 11 holds [zz 20000, 0, 0, 0] (15-bit slots); the 7 remaining
// zeros start an RLE too short for a block, so they are written as selector 8 (7 x 8 bits); final EOO.
const TIME_BLOCKS = '81' + '0be2040000000000' + '0800000000000000' + '00';

function column(b: unknown): unknown[] {
  const bin = b as Binary;
  expect(bin.sub_type).toBe(7);
  return BSONColumn.decode(bin.buffer.subarray(0, bin.position));
}

describe('compressBucket', () => {
  it('writes the exact version-2 document', () => {
    // Arrange
    const doc = v1Bucket();
    // Act
    const result = compressBucket(doc, 'time');
    // Assert
    expect(result.kind).toBe('compressed');
    if (result.kind !== 'compressed') return;
    const out = result.doc;
    expect(Object.keys(out)).toEqual(['_id', 'control', 'meta', 'data']);
    expect(out['control']).toEqual({
      version: 2,
      min: { time: t(0), temp: 20 },
      max: { time: t(110), temp: 31 },
      closed: false,
      count: 12,
    });
    expect(Object.keys(out['control'] as object)).toEqual(['version', 'min', 'max', 'closed', 'count']);
    const data = out['data'] as Record<string, unknown>;
    expect(Object.keys(data)).toEqual(['time', 'temp', 'note']);
    expect(column(data['time'])).toEqual(sortedTimes);
    expect(column(data['temp'])).toEqual(sortedTemps);
    // Row 1 (time 10 s) is the second row after sorting.
    expect(column(data['note'])).toEqual([undefined, 'x', ...new Array<undefined>(10).fill(undefined)]);
    // Exact column bytes: the Date literal, then the blocks of TIME_BLOCKS.
    expect(Buffer.from((data['time'] as Binary).buffer).toString('hex')).toBe(
      '0900' +
        Buffer.from(serialize({ v: t(0) }))
          .subarray(7, 15)
          .toString('hex') +
        TIME_BLOCKS,
    );
    expect(result.bytesBefore).toBe(serialize(doc).length);
    expect(result.bytesAfter).toBe(serialize(out).length);
  });

  it('sizes the version-1 document as stored, with an undefined cell in a full column left out', () => {
    const doc = v1Bucket();
    const temps = (doc['data'] as Record<string, Record<string, unknown>>)['temp'] as Record<string, unknown>;
    temps['3'] = undefined;
    const result = compressBucket(doc, 'time');
    expect(result.kind).toBe('compressed');
    if (result.kind !== 'compressed') return;
    expect(result.bytesBefore).toBe(serialize(doc, { ignoreUndefined: true }).length);
    // The undefined cell is kept as a value (BSON null), not as a missing entry.
    const stored = column((result.doc['data'] as Record<string, unknown>)['temp']);
    expect(stored.filter((v) => v === null)).toHaveLength(1);
  });

  it('reports notSmaller for a tiny bucket', () => {
    const doc = { _id: id, control: { version: 1, min: {}, max: {} }, data: { time: { '0': t(0) } } };
    expect(compressBucket(doc, 'time').kind).toBe('notSmaller');
  });

  it('fails on extra rows, non-canonical keys, or a non-Date time', () => {
    // (JS objects always list integer keys in ascending order, so unordered keys cannot occur.)
    const nonCanonical = v1Bucket();
    (nonCanonical['data'] as Record<string, unknown>)['temp'] = { '0': 1, '01': 2 };
    expect(compressBucket(nonCanonical, 'time').kind).toBe('failed');
    const extra = v1Bucket();
    (extra['data'] as Record<string, unknown>)['temp'] = { '0': 1, '50': 2 };
    expect(compressBucket(extra, 'time').kind).toBe('failed');
    // A full column with one more key, or with its last row key replaced by a name.
    const fullPlusName = v1Bucket();
    const temps = (fullPlusName['data'] as Record<string, Record<string, unknown>>)['temp'] as Record<
      string,
      unknown
    >;
    temps['x'] = 1;
    expect(compressBucket(fullPlusName, 'time').kind).toBe('failed');
    delete temps['11'];
    expect(compressBucket(fullPlusName, 'time').kind).toBe('failed');
    const badTime = v1Bucket();
    (badTime['data'] as Record<string, unknown>)['time'] = { '0': 5 };
    const r = compressBucket(badTime, 'time');
    expect(r.kind).toBe('failed');
    if (r.kind === 'failed') expect(r.error.codeName).toBe('TimeseriesBucketCompressionFailed');
    expect(compressBucket({ ...v1Bucket(), control: { version: 2 } }, 'time').kind).toBe('failed');
  });

  it('compresses a large bucket and decompresses it back to the sorted version-1 rows', () => {
    const n = 1000;
    const time: Record<string, unknown> = {};
    const cpu: Record<string, unknown> = {};
    const tags: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      time[String(i)] = t(i * 10);
      cpu[String(i)] = Math.round(Math.sin(i) * 1000) / 100;
      if (i % 3 === 0) tags[String(i)] = { host: 'h1', region: i % 2 ? 'a' : 'b' };
    }
    const doc = {
      _id: id,
      control: { version: 1, min: {}, max: {} },
      meta: { host: 'h1' },
      data: { time, cpu, tags },
    };
    const r = compressBucket(doc, 'time');
    expect(r.kind).toBe('compressed');
    if (r.kind !== 'compressed') return;
    expect(r.bytesAfter).toBeLessThan(r.bytesBefore / 3);
    const back = decompressBucket(r.doc);
    expect(serialize(back)).toEqual(
      serialize({
        _id: id,
        control: { version: 1, min: {}, max: {} },
        meta: { host: 'h1' },
        data: { time, cpu, tags },
      }),
    );
  });
});

describe("compressBucket with order: 'stored'", () => {
  it('keeps rows and columns in their stored order: version 3 when out of time order, 2 when in it', () => {
    const result = compressBucket(v1Bucket(), 'time', { order: 'stored' });
    expect(result.kind).toBe('compressed');
    if (result.kind !== 'compressed') return;
    expect((result.doc['control'] as { version: unknown }).version).toBe(3);
    const data = result.doc['data'] as Record<string, unknown>;
    expect(Object.keys(data)).toEqual(['temp', 'time', 'note']);
    expect(column(data['time'])).toEqual(order.map((k) => t(10 * k)));
    expect(column(data['temp'])).toEqual(order.map((k) => 20 + k));
    // Decompressed, the very document compressed (in its order): nothing moved.
    expect(serialize(decompressBucket(result.doc))).toEqual(
      serialize({ ...v1Bucket(), control: { version: 1, ...omitVersion(v1Bucket()) } }),
    );
    const inOrder = {
      ...v1Bucket(),
      data: { time: { '0': t(0), '1': t(10) }, temp: { '0': 1, '1': 2 } },
    };
    const sorted = compressBucket(inOrder, 'time', { order: 'stored', whenNotSmaller: 'compress' });
    expect(sorted.kind === 'compressed' && (sorted.doc['control'] as { version: unknown }).version).toBe(2);
  });

  it('gives the document an 8.0 engine appended in that order', async () => {
    // The embedded engine's compressed bucket of measurements appended out of time order (version 3),
    // decompressed and compressed again in stored order: the same bytes.
    const { BucketEngine } = await import('../../../src/index.js');
    const engine = new BucketEngine();
    const coll = await engine.createCollection('w', { timeseries: { timeField: 'time', metaField: 'm' } });
    for (const k of order) {
      await coll.insertMany([
        { time: t(10 * k), m: 'a', temp: 20 + k, ...(k % 3 === 0 ? { note: 'x' } : {}) },
      ]);
    }
    const [doc] = (await coll.buckets.find().toArray()) as Array<Record<string, unknown>>;
    expect((doc?.['control'] as { version: unknown }).version).toBe(3);
    const again = compressBucket(decompressBucket(doc as Record<string, unknown>), 'time', {
      order: 'stored',
      whenNotSmaller: 'compress',
    });
    expect(again.kind).toBe('compressed');
    if (again.kind !== 'compressed') return;
    expect(serialize(again.doc)).toEqual(serialize(doc as Record<string, unknown>));
    await engine.close();
  });
});

/** A document's `control` without its `version`. */
function omitVersion(doc: Record<string, unknown>): Record<string, unknown> {
  const { version: _version, ...rest } = doc['control'] as Record<string, unknown>;
  return rest;
}

describe('decompressBucket', () => {
  it('counts the BSON size of the version-1 document it builds', () => {
    const doc = v1Bucket();
    const data = doc['data'] as Record<string, Record<string, unknown>>;
    data['note'] = { '1': 'é☃𝄞', '11': null };
    data['nested'] = { '0': { a: [1, 'x'], b: new Date(0) }, '5': 2.5 };
    const r = compressBucket(doc, 'time');
    if (r.kind !== 'compressed') throw new Error('expected compression');
    const sized = decompressBucketSized(r.doc);
    expect(sized?.size).toBe(calculateObjectSize(sized?.doc ?? {}));
    expect(sized?.doc).toEqual(decompressBucket(r.doc));
    expect(decompressBucketSized(doc)).toBeUndefined();
  });

  it('turns version 2 and 3 into version 1 and leaves version 1 alone', () => {
    const r = compressBucket(v1Bucket(), 'time');
    if (r.kind !== 'compressed') throw new Error('expected compression');
    const v1 = decompressBucket(r.doc);
    expect(v1['control']).toEqual({
      version: 1,
      min: { time: t(0), temp: 20 },
      max: { time: t(110), temp: 31 },
      closed: false,
    });
    expect(v1['data']).toEqual({
      time: Object.fromEntries(sortedTimes.map((v, i) => [String(i), v])),
      temp: Object.fromEntries(sortedTemps.map((v, i) => [String(i), v])),
      note: { '1': 'x' },
    });
    const v3 = { ...r.doc, control: { ...(r.doc['control'] as object), version: 3 } };
    expect(decompressBucket(v3)['data']).toEqual(v1['data']);
    const plain = v1Bucket();
    expect(decompressBucket(plain)).toBe(plain);
  });

  it('rejects a column that decodes to more than control.count entries', () => {
    const r = compressBucket(v1Bucket(), 'time');
    if (r.kind !== 'compressed') throw new Error('expected compression');
    const bad = { ...r.doc, control: { ...(r.doc['control'] as object), count: 11 } };
    expect(() => decompressBucket(bad)).toThrow(/more than 11 entries/);
  });
});
