/**
 * The storage matrix against a real MongoDB, when `MONGODB_URI` is set (database `MONGODB_DB`, default
 * `tsbuckets_test`; every test uses its own collections and drops them). Without `MONGODB_URI` these tests
 * are skipped; the title says so.
 *
 *   MONGODB_URI='mongodb://localhost:27017/?replicaSet=rs0' npx vitest run test/integration
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BucketEngine } from '../../src/index.js';
import { MongoStorage } from '../../src/mongodb/index.js';
import { connectServer, serverMongoBackend } from './backends.js';
import type { ServerConnection } from './backends.js';
import { describeRollupSuite } from './rollups-suite.js';
import { describeEngineSuite, describeStorageSuite } from './storage-suite.js';

const uri = process.env.MONGODB_URI;
const title =
  uri === undefined
    ? 'MongoStorage against a real MongoDB (skipped: set MONGODB_URI to run these tests)'
    : 'MongoStorage against a real MongoDB (MONGODB_URI)';

describe.skipIf(uri === undefined)(title, () => {
  let connection: ServerConnection | undefined;
  const current = (): ServerConnection => {
    if (connection === undefined) throw new Error('not connected to MONGODB_URI');
    return connection;
  };
  beforeAll(async () => {
    connection = await connectServer(uri ?? '');
  });
  afterAll(async () => {
    await connection?.client.close();
  });

  for (const mode of ['timeseries', 'buckets'] as const) {
    describeStorageSuite(`server (${mode})`, serverMongoBackend(current, mode));
    describeEngineSuite(`server (${mode})`, serverMongoBackend(current, mode));
    describeRollupSuite(`server (${mode})`, serverMongoBackend(current, mode));
  }
  // Open buckets as version 1 on the server, compressed when they close (the server's own validator
  // and update semantics on the rewrite, the cells and the compression).
  describeEngineSuite(
    "server (timeseries, openBucketForm 'uncompressed')",
    serverMongoBackend(current, 'timeseries', { openBucketForm: 'uncompressed' }),
  );

  it("mode 'timeseries': the server's own view returns the measurements tsbuckets wrote", async () => {
    const { db } = current();
    const name = `view_${Date.now().toString(36)}_${Math.floor(Math.random() * 1e6).toString(36)}`;
    const engine = new BucketEngine({
      storage: new MongoStorage(db, { mode: 'timeseries' }),
      dbName: db.databaseName,
      parameters: { timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40, timeseriesBucketMaxCount: 7 },
    });
    try {
      const coll = await engine.createCollection(name, {
        timeseries: { timeField: 'ts', metaField: 'sensor' },
      });
      const t0 = Date.parse('2024-10-04T10:00:00Z');
      const docs = Array.from({ length: 40 }, (_, i) => ({
        ts: new Date(t0 + ((i * 37) % 1800) * 1000),
        sensor: { site: `s${i % 3}` },
        mid: i,
        temp: 20 + i / 4,
        ...(i % 4 === 0 ? { note: `n${i}` } : {}),
      }));
      await coll.insertMany(docs.slice(0, 25), { ordered: false });
      await coll.insertMany(docs.slice(25), { ordered: true });

      const [info] = await db.listCollections({ name }, { nameOnly: false }).toArray();
      expect(info?.type).toBe('timeseries');
      const fromView = await db
        .collection(name)
        .find({}, { projection: { _id: 0 } })
        .sort({ mid: 1 })
        .toArray();
      expect(fromView).toEqual(docs);
      expect(
        await db
          .collection(name)
          .countDocuments({ 'sensor.site': 's1', ts: { $gte: new Date(t0 + 600_000) } }),
      ).toBe(docs.filter((d) => d.sensor.site === 's1' && d.ts.getTime() >= t0 + 600_000).length);
      expect(await db.collection(`system.buckets.${name}`).countDocuments()).toBe(
        await coll.buckets.countDocuments(),
      );
    } finally {
      await engine.close();
      await db.dropCollection(name).catch(() => false);
    }
  });
});
