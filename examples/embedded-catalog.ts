/**
 * The catalog protocol without the engine (`npx tsx examples/embedded-catalog.ts`): two writers stage
 * measurements of two sensors concurrently, each claims the batches it can, the one that wins a batch
 * prepares it, writes it to its own storage and finishes it, and the other waits for the result — the
 * server's claim-to-commit. The storage here is a `MemoryStorage`; any store that can insert a document
 * and apply a guarded commit does.
 */
import { BucketCatalog, MemoryStorage, copyMeasurement, makeBucketMetadata } from '../src/index.js';
import type { BucketingOptions, InsertItem, WriteBatch } from '../src/index.js';

const ns = 'db.system.buckets.weather';
const options: BucketingOptions = {
  timeField: 'ts',
  metaField: 'sensor',
  bucketMaxSpanSeconds: 3600,
  bucketRoundingSeconds: 60,
  reopeningIndex: 'absent',
};
const catalog = new BucketCatalog({
  parameters: {
    timeseriesBucketMaxCount: 1000,
    timeseriesBucketMaxSize: 128000,
    timeseriesBucketMinCount: 10,
    timeseriesIdleBucketExpiryMemoryUsageThresholdBytes: 64 * 1024 * 1024,
    timeseriesIdleBucketExpiryMaxCountPerAttempt: 3,
    // The 8.0 format (the engine's default; the catalog alone defaults to the 5.x–7.x one).
    timeseriesAlwaysUseCompressedBuckets: true,
  },
});
const storage = new MemoryStorage();
await storage.createNamespace(ns, { timeseries: { timeField: 'ts', metaField: 'sensor' } });

/** A measurement as the catalog takes it: validated and copied, its time and series beside it. */
function item(doc: Record<string, unknown>): InsertItem {
  const measurement = copyMeasurement(doc);
  return {
    measurement,
    timeMs: (measurement.ts as Date).getTime(),
    metadata: makeBucketMetadata(measurement.sensor),
  };
}

/** One writer's unordered insert: stage, then commit the batches it wins and wait for the others. */
async function insert(docs: ReadonlyArray<Record<string, unknown>>): Promise<void> {
  const opId = catalog.newOpId();
  const staged = await catalog.insert(ns, options, docs.map(item), 'allow', opId);
  const batches = new Set<WriteBatch>();
  for (const result of staged) {
    if (result.kind !== 'staged') throw result.error;
    batches.add(result.batch);
  }
  for (const batch of batches) {
    if (!catalog.claimWriteBatchCommitRights(batch, opId)) continue;
    const prepared = await catalog.prepareCommit(batch);
    if (prepared.kind === 'aborted') continue; // its bucket was cleared: its writers stage it again
    try {
      if (prepared.kind === 'insert') await storage.insertOne(ns, { ...prepared.document });
      else if ((await storage.applyCommit(ns, prepared.commit)).kind !== 'updated') {
        throw new Error('the bucket changed under the catalog');
      }
      await catalog.finish(batch);
    } catch (error) {
      await catalog.abort(batch, error);
    }
  }
  // The batches other writers claimed: their result (counted in numWaits when not there yet).
  for (const batch of batches) await catalog.getWriteBatchResult(batch);
}

const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 10, 0, s));
await Promise.all([
  insert([
    { ts: t(0), sensor: 'north', temp: 21.5 },
    { ts: t(0), sensor: 'south', temp: 18.25 },
  ]),
  insert([
    { ts: t(10), sensor: 'north', temp: 21.75 },
    { ts: t(10), sensor: 'south', temp: 18.5 },
  ]),
]);
for await (const bucket of storage.find(ns, {})) console.log(bucket); // one compressed bucket per sensor
const { numBuckets, numCommits, numWaits, numMeasurementsCommitted } = catalog.serverStatus();
console.log({ numBuckets, numCommits, numWaits, numMeasurementsCommitted });
