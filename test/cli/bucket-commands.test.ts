/**
 * `inspect` and `stats` over MongoDB, against the driver-shaped fake: the collection's fields come from
 * the server, buckets are read through `MongoStorage`, compressed ones are shown decompressed.
 */
import { ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import { mongoBucketSource } from '../../src/cli/bucket-source.js';
import { PassThrough } from 'node:stream';

import { formatBucket, inspectFilter, runInspect } from '../../src/cli/inspect.js';
import type { CommandIo } from '../../src/cli/io.js';
import { formatStoredBucketStats, runStats, storedBucketStats } from '../../src/cli/stats.js';
import { BucketEngine } from '../../src/engine/bucket-engine.js';
import { TimeseriesError } from '../../src/errors.js';
import { MongoStorage } from '../../src/mongodb/mongo-storage.js';
import type { StoredBucket } from '../../src/storage/storage.js';
import { FakeDb } from '../integration/support/fake-mongo.js';

const T0 = Date.UTC(2026, 0, 1);

async function ingested(): Promise<FakeDb> {
  const db = new FakeDb('metrics');
  const engine = new BucketEngine({
    storage: new MongoStorage(db),
    dbName: 'metrics',
    // The 5.x–7.x format: version-1 open buckets and one compressed on close, both counted below.
    parameters: { timeseriesAlwaysUseCompressedBuckets: false },
    ttlMonitor: 'disabled',
  });
  const coll = await engine.createCollection('weather', {
    timeseries: { timeField: 't', metaField: 'station', granularity: 'seconds' },
  });
  // Station 1: every minute from 0:00 to 0:19, then 1:30 (time forward: the first bucket closes and is
  // compressed). Station 2: one measurement.
  await coll.insertMany(
    [
      ...Array.from({ length: 20 }, (_, i) => ({
        t: new Date(T0 + i * 60_000),
        station: { id: 1 },
        temp: 20 + i / 4,
        ...(i === 0 ? { ok: true } : {}),
      })),
      { t: new Date(T0 + 5_400_000), station: { id: 1 }, temp: 22.25, ok: false },
      { t: new Date(T0), station: { id: 2 }, temp: -1 },
    ],
    { ordered: false },
  );
  await engine.close();
  return db;
}

describe('inspect and stats over MongoDB (fake)', () => {
  it('reads the fields from the server and the buckets through MongoStorage', async () => {
    const db = await ingested();
    let closed = 0;
    const source = await mongoBucketSource(
      db,
      { collection: 'weather', mode: 'timeseries', timeField: 'ts' },
      () => {
        closed++;
        return Promise.resolve();
      },
    );
    expect([source.bucketsNs, source.timeField, source.metaField]).toEqual([
      'metrics.system.buckets.weather',
      't',
      'station',
    ]);
    const stats = await storedBucketStats(source.storage.find(source.bucketsNs, {}), source.timeField);
    expect(stats).toMatchObject({ buckets: 3, measurements: 22, series: 2, versions: { 1: 2, 2: 1, 3: 0 } });
    expect(stats.compressedBytes).toBeLessThan(stats.uncompressedBytes);
    expect(formatStoredBucketStats(stats).split('\n').slice(3, 10)).toEqual([
      '│ buckets                             │     3 │',
      '│   version 1 (uncompressed)          │     2 │',
      '│   version 2 (compressed)            │     1 │',
      '│   version 3 (compressed, unsorted)  │     0 │',
      '│ series                              │     2 │',
      '│ measurements                        │    22 │',
      '│ measurements per bucket             │   7.3 │',
    ]);

    const buckets: StoredBucket[] = [];
    for await (const b of source.storage.find(source.bucketsNs, inspectFilter({ series: '{"id": 1}' }), {
      sort: { _id: 1 },
    })) {
      buckets.push(b);
    }
    expect(buckets.map((b) => (b.control as { version: number }).version)).toEqual([2, 1]);
    const id = (buckets[0]!._id as ObjectId).toHexString();
    expect(formatBucket(buckets[0]!, 't', 2)).toBe(
      `bucket ${id}: version 2, 20 measurements
meta: {"id":1}
┌───────┬──────────────────────────┬──────────────────────────┐
│ field │ control.min              │ control.max              │
├───────┼──────────────────────────┼──────────────────────────┤
│ t     │ 2026-01-01T00:00:00.000Z │ 2026-01-01T00:19:00.000Z │
│ temp  │ 20                       │ 24.75                    │
│ ok    │ true                     │ true                     │
└───────┴──────────────────────────┴──────────────────────────┘
┌───┬──────────────────────────┬───────┬──────┐
│ # │ t                        │ temp  │ ok   │
├───┼──────────────────────────┼───────┼──────┤
│ 0 │ 2026-01-01T00:00:00.000Z │ 20    │ true │
│ 1 │ 2026-01-01T00:01:00.000Z │ 20.25 │      │
└───┴──────────────────────────┴───────┴──────┘
… 18 more measurements`,
    );
    await source.close();
    expect(closed).toBe(1);
  });

  it('runs inspect and stats on the source and closes it', async () => {
    const db = await ingested();
    const out: string[] = [];
    const io: CommandIo = {
      out: (t) => out.push(t),
      warn: (t) => out.push(`warn: ${t}`),
      err: new PassThrough(),
      stdin: new PassThrough(),
    };
    let closed = 0;
    const open = () =>
      mongoBucketSource(db, { collection: 'weather', mode: 'timeseries', timeField: 'ts' }, () => {
        closed++;
        return Promise.resolve();
      });
    await runInspect(await open(), inspectFilter({ series: '{"id": 2}' }), { limit: 5, rows: 5 }, io);
    expect(out.join('\n').split('\n').slice(1)).toEqual([
      'meta: {"id":2}',
      '┌───────┬──────────────────────────┬──────────────────────────┐',
      '│ field │ control.min              │ control.max              │',
      '├───────┼──────────────────────────┼──────────────────────────┤',
      '│ t     │ 2026-01-01T00:00:00.000Z │ 2026-01-01T00:00:00.000Z │',
      '│ temp  │ -1                       │ -1                       │',
      '└───────┴──────────────────────────┴──────────────────────────┘',
      '┌───┬──────────────────────────┬──────┐',
      '│ # │ t                        │ temp │',
      '├───┼──────────────────────────┼──────┤',
      '│ 0 │ 2026-01-01T00:00:00.000Z │ -1   │',
      '└───┴──────────────────────────┴──────┘',
      '1 of 1 matching buckets shown (--limit 5)',
    ]);
    out.length = 0;
    await runStats(await open(), 'weather', io);
    // The fake server answers no collStats: only the stored buckets, and where the catalog's statistics are.
    expect(out).toHaveLength(2);
    expect(out[0]).toContain('│ measurements                        │    22 │');
    expect(out[1]).toBe(
      'The catalog statistics (serverStatus().bucketCatalog) live in the process that ingests: print them there, or use `tsbuckets ingest --stats`.',
    );
    expect(closed).toBe(2);
  });

  it('filters by _id and by series (normalised), and refuses bad values', () => {
    const id = '6955b900eacd7fb55083ec4f';
    expect(inspectFilter({ bucket: id, series: '{"b": 1, "a": {"$numberLong": "2"}}' })).toEqual({
      _id: ObjectId.createFromHexString(id),
      meta: { a: expect.objectContaining({ _bsontype: 'Long' }) as unknown, b: 1 },
    });
    expect(Object.keys(inspectFilter({ series: '{"b": 1, "a": 2}' }).meta as object)).toEqual(['a', 'b']);
    expect(() => inspectFilter({ bucket: 'xyz' })).toThrow(
      new TimeseriesError('BadValue', "--bucket: 'xyz' is not an ObjectId (24 hex digits)"),
    );
    expect(() => inspectFilter({ series: '{' })).toThrow(TimeseriesError);
  });
});
