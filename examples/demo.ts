/**
 * The main job (`npm run demo`): ingest generated sensor data into the embedded engine with several
 * concurrent writers, then print throughput, what the buckets look like and the catalog's statistics.
 *
 * Options: `--measurements N` (default 1 000 000), `--sensors N` (default 1000), `--writers N` (default 8).
 */
import { BucketEngine } from '../src/index.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback;
}

const totalMeasurements = arg('measurements', 1_000_000);
const numSensors = arg('sensors', 1000);
const numWriters = arg('writers', 8);
const batchSize = 1000;
const start = Date.UTC(2026, 0, 1);
const intervalMs = 10_000;

const engine = new BucketEngine();
const coll = await engine.createCollection('weather', {
  timeseries: { timeField: 'ts', metaField: 'sensor', granularity: 'seconds' },
});

// Each sensor reports every 10 s; the stream is cut into batches of 1000 handed to writers round-robin.
const sensors = Array.from({ length: numSensors }, (_, i) => ({ id: `sensor-${i}`, region: `r${i % 10}` }));
function* batches(): Generator<Array<Record<string, unknown>>> {
  let batch: Array<Record<string, unknown>> = [];
  for (let n = 0; n < totalMeasurements; n++) {
    const tick = Math.floor(n / numSensors);
    const s = sensors[n % numSensors]!;
    batch.push({
      ts: new Date(start + tick * intervalMs),
      sensor: s,
      temp: Math.round((20 + 5 * Math.sin(tick / 50 + (n % numSensors))) * 100) / 100,
      humidity: 40 + ((tick + n) % 30),
    });
    if (batch.length === batchSize) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

const source = batches();
const t0 = performance.now();
await Promise.all(
  Array.from({ length: numWriters }, async () => {
    for (let next = source.next(); !next.done; next = source.next()) {
      await coll.insertMany(next.value, { ordered: false });
    }
  }),
);
const seconds = (performance.now() - t0) / 1000;

const stats = await coll.stats();
const status = engine.serverStatus().bucketCatalog;
console.log(
  `tsbuckets demo: ${totalMeasurements} measurements, ${numSensors} sensors, ${numWriters} writers`,
);
console.log(
  `ingest: ${seconds.toFixed(2)} s, ${Math.round(totalMeasurements / seconds).toLocaleString('en-US')} measurements/s`,
);
console.log(`buckets: ${stats.timeseries.bucketCount}, average ${stats.timeseries.avgBucketSize ?? 0} bytes`);
for await (const bucket of coll.buckets.find({}, { projection: { _id: 1, control: 1, meta: 1 } })) {
  console.log('first bucket (without data):', JSON.stringify(bucket));
  break;
}
console.log('\ncollStats.timeseries');
console.table(Object.fromEntries(Object.entries(stats.timeseries).map(([k, v]) => [k, { value: v }])));
console.log('serverStatus.bucketCatalog');
console.table(Object.fromEntries(Object.entries(status).map(([k, v]) => [k, { value: v }])));
await engine.close();
