/**
 * Storage per measurement of the buckets an ingest produces, in each form: one row document per
 * measurement, version-1 buckets (5.x-7.x while open) and compressed buckets (8.x always, 5.x-7.x once
 * closed), for a dense and a sparse dataset. The engine's own buckets are measured: each is taken back to
 * version 1 and compressed again, so both forms hold exactly the same measurements.
 *
 * Run alone with `npx tsx bench/compression.bench.ts`.
 */
import { pathToFileURL } from 'node:url';

import { calculateObjectSize } from 'bson';

import { compressBucket, decompressBucket } from '../src/bucket-format/bucket-compression.js';
import { BucketEngine } from '../src/index.js';
import { sparseSensors, tsbsCpuOnly } from './datasets.js';
import type { Doc } from './datasets.js';
import { bucketFormats, engineOptions, heading, record } from './harness.js';

async function bytesPerMeasurement(
  docs: ReadonlyArray<Doc>,
  metaField: string,
): Promise<{ rows: number; v1: number; compressed: number; buckets: number }> {
  const [format] = await bucketFormats();
  const engine = new BucketEngine(engineOptions(format!, {}));
  const coll = await engine.createCollection('bytes', { timeseries: { timeField: 'ts', metaField } });
  for (let i = 0; i < docs.length; i += 1000)
    await coll.insertMany(docs.slice(i, i + 1000), { ordered: false });
  let v1 = 0;
  let compressed = 0;
  let buckets = 0;
  for await (const bucket of engine.storage.find(coll.bucketsNamespace, {})) {
    const result = compressBucket(decompressBucket(bucket), 'ts', { validate: false });
    if (result.kind === 'failed') throw result.error;
    v1 += result.bytesBefore;
    compressed += result.bytesAfter;
    buckets++;
  }
  await engine.close();
  let rows = 0;
  for (const doc of docs) rows += calculateObjectSize(doc);
  return { rows: rows / docs.length, v1: v1 / docs.length, compressed: compressed / docs.length, buckets };
}

/**
 * Run the compression benchmark and print its results.
 *
 * @param quick - smaller datasets.
 */
export async function runCompressionBench(quick: boolean): Promise<void> {
  heading('compression: bytes per measurement as rows, version-1 buckets and compressed buckets');
  const n = quick ? 36_000 : 144_000;
  const datasets: ReadonlyArray<[string, ReadonlyArray<Doc>, string]> = [
    ['TSBS cpu-only (100 hosts)', tsbsCpuOnly(100, n), 'tags'],
    ['sparse sensors (100 series)', sparseSensors(100, n), 'sensor'],
  ];
  for (const [name, docs, metaField] of datasets) {
    const b = await bytesPerMeasurement(docs, metaField);
    record({
      chart: 'compression',
      series: name,
      x: 'row documents',
      y: b.rows,
      unit: 'bytes per measurement',
    });
    record({
      chart: 'compression',
      series: name,
      x: 'version-1 buckets',
      y: b.v1,
      unit: 'bytes per measurement',
    });
    record({
      chart: 'compression',
      series: name,
      x: 'compressed buckets',
      y: b.compressed,
      unit: 'bytes per measurement',
    });
    console.log(
      `  ${name}: rows ${b.rows.toFixed(1)} B, version-1 buckets ${b.v1.toFixed(1)} B, compressed ${b.compressed.toFixed(1)} B per measurement (${(b.compressed / b.rows).toFixed(3)}x the rows; ${b.buckets} buckets)`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await runCompressionBench(process.argv.includes('--quick'));
}
