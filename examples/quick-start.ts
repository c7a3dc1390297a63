/**
 * The README's "Use" section as a script (`npx tsx examples/quick-start.ts`): create a time-series
 * collection in the embedded engine, insert two measurements, and look at the bucket, the measurements,
 * the query plan and the statistics.
 */
import { BucketEngine } from '../src/index.js';

const engine = new BucketEngine();
const weather = await engine.createCollection('weather', {
  timeseries: { timeField: 'ts', metaField: 'sensor', granularity: 'seconds' },
});
await weather.insertMany(
  [
    { ts: new Date('2026-01-01T10:00:00Z'), sensor: { id: 7 }, temp: 21.5 },
    { ts: new Date('2026-01-01T10:00:10Z'), sensor: { id: 7 }, temp: 21.7 },
  ],
  { ordered: false },
);
console.log(await weather.buckets.find().toArray()); // the bucket documents MongoDB would store
console.log(await weather.find({ 'sensor.id': 7, temp: { $gt: 21.6 } }).toArray()); // measurements back
console.log(await weather.find({}, { sort: { ts: -1 }, limit: 1 }).explain()); // buckets examined vs total
console.log((await weather.stats()).timeseries); // bucketCount, numBucketInserts, numCommits, ...
console.log(engine.serverStatus().bucketCatalog); // numBuckets, numOpenBuckets, memoryUsage, ...
await engine.close();
