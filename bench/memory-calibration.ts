/**
 * Calibration of the catalog's memory estimate (src/catalog/memory-usage.ts): heap held per open bucket,
 * measured, next to the estimate. Open buckets of one measurement each are made in an engine whose storage
 * keeps nothing, so the heap growth is the catalog's.
 *
 * One field count and bucket format per process (a finished run's heap is not reliably gone before the
 * next one starts); the second argument `v1` writes the 5.x–7.x format instead of the compressed one, the
 * third the measurements per bucket (default 1; a compressed bucket encodes its measurements in runs of
 * 16, so 20 gives buckets with their column encoders), a fourth `eager` encodes every commit at once (as
 * over MongoStorage) instead:
 *   node --expose-gc --import tsx bench/memory-calibration.ts 3
 *   node --expose-gc --import tsx bench/memory-calibration.ts 11 v1
 *   node --expose-gc --import tsx bench/memory-calibration.ts 11 8.0 20
 *   node --expose-gc --import tsx bench/memory-calibration.ts 11 8.0 1 eager
 */
import { BucketEngine } from '../src/index.js';
import { DiscardingStorage } from './discarding-storage.js';
import { kTakesDeferredColumns } from '../src/storage/storage.js';
import { collectGarbage } from './harness.js';

const series = 50_000;
const fields = Number(process.argv[2] ?? 3);
const perBucket = Number(process.argv[4] ?? 1);
const docs = Array.from({ length: series }, (_, i) => {
  const doc: Record<string, unknown> = { ts: new Date(Date.UTC(2026, 0, 1)), sensor: i };
  for (let f = 0; f < fields - 1; f++) doc[`f${f}`] = f * 1.5;
  return doc;
});
collectGarbage();
const before = process.memoryUsage().heapUsed;
const engine = new BucketEngine({
  storage:
    process.argv[5] === 'eager'
      ? Object.defineProperty(new DiscardingStorage(), kTakesDeferredColumns, { value: false })
      : new DiscardingStorage(),
  parameters: {
    timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
    timeseriesAlwaysUseCompressedBuckets: process.argv[3] !== 'v1',
  },
});
const coll = await engine.createCollection('calibration', {
  timeseries: { timeField: 'ts', metaField: 'sensor' },
});
for (let m = 0; m < perBucket; m++) {
  for (const doc of docs) doc.ts = new Date(Date.UTC(2026, 0, 1) + m * 1000);
  for (let i = 0; i < series; i += 1000) await coll.insertMany(docs.slice(i, i + 1000), { ordered: false });
}
collectGarbage();
const heap = process.memoryUsage().heapUsed - before;
const status = engine.serverStatus().bucketCatalog;
console.log(
  `${fields} fields, ${process.argv[3] === 'v1' ? '5.x–7.x' : '8.0'} format${process.argv[5] === 'eager' ? ' (eager)' : ''}, ${perBucket} per bucket: heap ${(heap / status.numOpenBuckets).toFixed(0)} B per open bucket, estimate ${(status.memoryUsage / status.numOpenBuckets).toFixed(0)} B`,
);
await engine.close();
