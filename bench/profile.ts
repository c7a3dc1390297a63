/**
 * The bulk-loader shape alone, for profiling: TSBS cpu-only, 1 000 series, one measurement per series per
 * `insertMany`, 100 calls, then every bucket document read back once; repeated `--repeat` times (default
 * 5) after one warm-up.
 *
 *   node --cpu-prof --cpu-prof-dir=tmp/prof --trace-gc --import tsx bench/profile.ts
 *   node --cpu-prof --import tsx bench/profile.ts --format 1 --series 100000 --calls 2
 *   node --cpu-prof --import tsx bench/profile.ts --series 100 --batch 1000   # 10 per series per call
 *
 * Each run prints wall and CPU µs per measurement (CPU time moves less on a shared machine), and how the wall
 * time divides between the first call, the later calls and the read-back (each as µs per measurement of
 * the run).
 *
 * Open the `.cpuprofile` in Chrome DevTools (Performance) or VS Code. `--format` indexes the formats the
 * build writes (0: the default; 1: the 5.x-7.x format when the build has both). For line-level ticks,
 * bundle first (`npx esbuild bench/profile.ts --bundle --platform=node --format=esm --outfile=tmp/p.mjs`)
 * and profile the bundle.
 */
import { parseArgs } from 'node:util';

import { BucketEngine } from '../src/index.js';
import { tsbsCpuOnly } from './datasets.js';
import { bucketFormats, engineOptions } from './harness.js';

const { values } = parseArgs({
  options: {
    format: { type: 'string', default: '0' },
    series: { type: 'string', default: '1000' },
    calls: { type: 'string', default: '100' },
    // Measurements per call: the series count (one per series per call) unless given; `--series 100
    // --batch 1000` is the "10 per series per call" shape.
    batch: { type: 'string' },
    repeat: { type: 'string', default: '5' },
  },
});
const formats = await bucketFormats();
const format = formats[Number(values.format)];
if (format === undefined) throw new Error(`--format must be below ${formats.length}`);
const series = Number(values.series);
const calls = Number(values.calls);
const batch = Number(values.batch ?? series);
const docs = tsbsCpuOnly(series, batch * calls);

/**
 * Wall and CPU milliseconds of one run (CPU time moves less than wall time on a shared machine), and the
 * wall milliseconds of its first call, of the later calls and of the read-back.
 */
async function once(): Promise<{ ms: number; cpuMs: number; phases: [number, number, number] }> {
  const t = performance.now();
  const cpu = process.cpuUsage();
  const engine = new BucketEngine(engineOptions(format!, {}));
  const coll = await engine.createCollection('profile', {
    timeseries: { timeField: 'ts', metaField: 'tags' },
  });
  let firstCall = 0;
  for (let i = 0; i < docs.length; i += batch) {
    await coll.insertMany(docs.slice(i, i + batch), { ordered: false });
    if (i === 0) firstCall = performance.now();
  }
  const inserted = performance.now();
  let buckets = 0;
  for await (const _bucket of engine.storage.find(coll.bucketsNamespace, {})) buckets++;
  const read = performance.now();
  await engine.close();
  if (buckets === 0) throw new Error('no buckets');
  const used = process.cpuUsage(cpu);
  return {
    ms: performance.now() - t,
    cpuMs: (used.user + used.system) / 1000,
    phases: [firstCall - t, inserted - firstCall, read - inserted],
  };
}

/** Milliseconds as µs per measurement. */
const perMeasurement = (ms: number): string => ((ms * 1000) / docs.length).toFixed(2);

await once();
for (let r = 0; r < Number(values.repeat); r++) {
  const { ms, cpuMs, phases } = await once();
  console.log(
    `${format.name}: ${series} series x ${calls} calls of ${batch}, ${perMeasurement(ms)} µs per measurement (${((docs.length / ms) * 1000).toFixed(0)} measurements/s), ${perMeasurement(cpuMs)} µs of CPU; first call ${perMeasurement(phases[0])}, later calls ${perMeasurement(phases[1])}, read-back ${perMeasurement(phases[2])}`,
  );
}
