/**
 * Heap per open bucket and per measurement, measured after full garbage collections (`--expose-gc`).
 *
 * Each reading runs in a process of its own, so that nothing a previous reading left behind is counted:
 * `runMemoryBench` (called by `npm run bench`) starts one child per format and case. By hand:
 *
 *   node --expose-gc --import tsx bench/memory.bench.ts open-buckets 0
 *   node --expose-gc --import tsx bench/memory.bench.ts measurements 1
 *
 * (the last argument indexes the formats the build writes: 0 is the default).
 *
 * - `open-buckets`: 50 000 TSBS series (10 float fields, 3 meta tags), one measurement each, into a storage
 *   that keeps nothing: the catalog's own heap per open bucket, next to its `memoryUsage` estimate.
 * - `measurements`: the bulk-loader shape (1 000 TSBS series, one measurement per series per call, 100
 *   calls) into `MemoryStorage`: heap growth of engine and storage per measurement, next to the BSON
 *   bytes per measurement of the bucket documents it holds.
 * - `read-back`: 20 000 TSBS series, two measurements each (two calls), into `MemoryStorage`, then every
 *   bucket read once: heap per bucket after the read, next to the heap per bucket before it (a read must
 *   not leave each open bucket more to hold).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { calculateObjectSize } from 'bson';

import { BucketEngine, MemoryStorage } from '../src/index.js';
import { DiscardingStorage } from './discarding-storage.js';
import { tsbsCpuOnly } from './datasets.js';
import { bucketFormats, engineOptions, heading, record } from './harness.js';

type MemoryCase = 'open-buckets' | 'measurements' | 'read-back';

/** What one child process reports (one JSON line). */
interface MemoryReading {
  readonly case: MemoryCase;
  readonly format: string;
  /** Heap bytes per unit (open bucket, measurement, or bucket after the read). */
  readonly heapPerUnit: number;
  /**
   * The catalog's estimate per open bucket, the bucket documents' BSON bytes per measurement, or the heap
   * per bucket before the read.
   */
  readonly reference: number;
  /** Whether the storage really kept nothing (open-buckets only). */
  readonly storageEmpty: boolean;
}

function heapUsed(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc (node --expose-gc --import tsx ...)');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

async function measure(memoryCase: MemoryCase, formatIndex: number): Promise<MemoryReading> {
  const format = (await bucketFormats())[formatIndex];
  if (format === undefined) throw new Error(`no format ${formatIndex}`);
  const series = { 'open-buckets': 50_000, measurements: 1_000, 'read-back': 20_000 }[memoryCase];
  const calls = { 'open-buckets': 1, measurements: 100, 'read-back': 2 }[memoryCase];
  // The dataset stays alive across both readings: only what the engine and storage hold is counted.
  const docs = tsbsCpuOnly(series, series * calls);
  const storage = memoryCase === 'open-buckets' ? new DiscardingStorage() : new MemoryStorage();
  const before = heapUsed();
  const engine = new BucketEngine(engineOptions(format, { storage }));
  const coll = await engine.createCollection('memory', {
    timeseries: { timeField: 'ts', metaField: 'tags' },
  });
  for (let i = 0; i < docs.length; i += series)
    await coll.insertMany(docs.slice(i, i + series), { ordered: false });
  const growth = heapUsed() - before;
  const status = engine.serverStatus().bucketCatalog;
  let bucketBytes = 0;
  let stored = 0;
  for await (const bucket of storage.find(coll.bucketsNamespace, {})) {
    bucketBytes += calculateObjectSize(bucket);
    stored++;
  }
  if (memoryCase === 'read-back') {
    const afterRead = heapUsed() - before;
    await engine.close();
    return {
      case: memoryCase,
      format: format.name,
      heapPerUnit: afterRead / stored,
      reference: growth / stored,
      storageEmpty: false,
    };
  }
  const reading: MemoryReading =
    memoryCase === 'open-buckets'
      ? {
          case: memoryCase,
          format: format.name,
          heapPerUnit: growth / status.numOpenBuckets,
          reference: status.memoryUsage / status.numOpenBuckets,
          storageEmpty: stored === 0,
        }
      : {
          case: memoryCase,
          format: format.name,
          heapPerUnit: growth / docs.length,
          reference: bucketBytes / docs.length,
          storageEmpty: false,
        };
  await engine.close();
  return reading;
}

/** Run one case in a child process with `--expose-gc`. */
function inChild(memoryCase: MemoryCase, formatIndex: number): Promise<MemoryReading> {
  const script = fileURLToPath(import.meta.url);
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', script, memoryCase, String(formatIndex)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || line === '') reject(new Error(`memory bench child exited ${code}: ${out}`));
      else resolve(JSON.parse(line) as MemoryReading);
    });
  });
}

/**
 * Run the memory benchmarks (one child process per format and case) and print their results.
 */
export async function runMemoryBench(): Promise<void> {
  heading('memory: heap per open bucket and per measurement (after full GCs, one process per reading)');
  const formats = await bucketFormats();
  for (let i = 0; i < formats.length; i++) {
    const open = await inChild('open-buckets', i);
    const perMeasurement = await inChild('measurements', i);
    const readBack = await inChild('read-back', i);
    record({
      chart: 'memory',
      series: open.format,
      x: 'per open bucket',
      y: open.heapPerUnit,
      unit: 'bytes',
    });
    record({
      chart: 'memory',
      series: open.format,
      x: 'per measurement',
      y: perMeasurement.heapPerUnit,
      unit: 'bytes',
    });
    console.log(
      `  ${open.format.padEnd(15)} ${open.heapPerUnit.toFixed(0)} B per open bucket (catalog estimate ${open.reference.toFixed(0)} B${open.storageEmpty ? '' : '; the storage kept documents, counted too'}); ${perMeasurement.heapPerUnit.toFixed(0)} B per measurement held by engine and storage vs ${perMeasurement.reference.toFixed(0)} B of bucket BSON; ${readBack.heapPerUnit.toFixed(0)} B per bucket of two measurements after reading every bucket back (${readBack.reference.toFixed(0)} B before)`,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [memoryCase, formatIndex] = process.argv.slice(2);
  if (memoryCase === 'open-buckets' || memoryCase === 'measurements' || memoryCase === 'read-back') {
    console.log(JSON.stringify(await measure(memoryCase, Number(formatIndex ?? 0))));
  } else {
    await runMemoryBench();
  }
}
