/**
 * `tsbuckets demo`: ingest generated sensor data into the embedded engine with several concurrent
 * writers, with a progress bar, then print a short summary (`--stats`: every counter).
 *
 * The data: `sensors` series, each reporting every 10 s from 2026-01-01, a temperature and a humidity; the
 * stream is cut into batches handed to the writers in turn.
 *
 * @packageDocumentation
 */
import type { Command } from 'commander';

import { parseBatchSize, parsePositiveInteger, parseWriters } from './arguments.js';
import { measureBuckets } from './bucket-sizes.js';
import { openTarget } from './collection-target.js';
import type { CommandIo } from './io.js';
import { startProgress } from './progress.js';
import { formatFullStats, formatIngestSummary } from './summary.js';

/** Options of the demo. */
export interface DemoOptions {
  /** Measurements to ingest. */
  readonly measurements: number;
  /** Series. */
  readonly sensors: number;
  /** Concurrent writers. */
  readonly writers: number;
  /** Measurements per `insertMany`. */
  readonly batchSize: number;
  /** Print every counter. */
  readonly stats: boolean;
}

const kStart = Date.UTC(2026, 0, 1);
const kIntervalMs = 10_000;

function* demoBatches(options: DemoOptions): Generator<Array<Record<string, unknown>>> {
  const sensors = Array.from({ length: options.sensors }, (_, i) => ({
    id: `sensor-${i}`,
    region: `r${i % 10}`,
  }));
  let batch: Array<Record<string, unknown>> = [];
  for (let n = 0; n < options.measurements; n++) {
    const tick = Math.floor(n / options.sensors);
    const i = n % options.sensors;
    batch.push({
      ts: new Date(kStart + tick * kIntervalMs),
      sensor: sensors[i],
      temp: Math.round((20 + 5 * Math.sin(tick / 50 + i)) * 100) / 100,
      humidity: 40 + ((tick + n) % 30),
    });
    if (batch.length === options.batchSize) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/**
 * Run the demo.
 *
 * @param options - sizes and output.
 * @param io - where to print.
 */
export async function runDemo(options: DemoOptions, io: CommandIo): Promise<void> {
  const target = await openTarget({
    mode: 'timeseries',
    collection: 'weather',
    timeField: 'ts',
    metaField: 'sensor',
    granularity: 'seconds',
  });
  try {
    io.out(
      `tsbuckets demo: ${options.measurements.toLocaleString('en-US')} measurements, ${options.sensors.toLocaleString('en-US')} sensors, ${options.writers} writer${options.writers === 1 ? '' : 's'} (embedded storage)`,
    );
    const progress = startProgress({ total: options.measurements, unit: 'measurements', stream: io.err });
    const source = demoBatches(options);
    let done = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: options.writers }, async () => {
        for (let next = source.next(); next.done !== true; next = source.next()) {
          await target.coll.insertMany(next.value, { ordered: false });
          done += next.value.length;
          progress.update(done, { measurements: done });
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    progress.stop();
    const stats = await target.coll.stats();
    const status = target.engine.serverStatus().bucketCatalog;
    const sizes = await measureBuckets(target.coll.buckets.find(), 'ts');
    io.out(
      formatIngestSummary({
        inserted: done,
        seconds,
        stats,
        openBuckets: status.numOpenBuckets,
        sizes,
      }),
    );
    if (options.stats) io.out(formatFullStats(stats, status));
  } finally {
    await target.close();
  }
}

/**
 * Register `tsbuckets demo`.
 *
 * @param program - the root command.
 * @param io - where to print.
 */
export function registerDemo(program: Command, io: CommandIo): void {
  program
    .command('demo')
    .description('ingest generated sensor data into the embedded engine and summarise what it stored')
    .option('--measurements <n>', 'measurements to ingest', parsePositiveInteger, 1_000_000)
    .option('--sensors <n>', 'series (sensors), each reporting every 10 s', parsePositiveInteger, 1000)
    .option('--writers <n>', 'concurrent writers (at most 1024)', parseWriters, 8)
    .option('--batch-size <n>', 'measurements per insertMany (at most 100000)', parseBatchSize, 1000)
    .option('--stats', 'also print every counter (collStats.timeseries, serverStatus.bucketCatalog)', false)
    .action(async (options: DemoOptions) => {
      await runDemo(options, io);
    });
}
