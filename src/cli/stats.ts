/**
 * `tsbuckets stats`: what a collection's buckets are like (counts, versions, series, sizes per
 * measurement), and the statistics with MongoDB's names — the engine's `collStats.timeseries` and
 * `serverStatus.bucketCatalog` for a file ingested in this process, the server's `collStats` for a
 * collection in MongoDB.
 *
 * @packageDocumentation
 */
import type { Command } from 'commander';

import { makeBucketMetadata } from '../catalog/bucket-metadata.js';
import { bucketVersion } from '../reader/bucket-unpacker.js';
import type { StoredBucket } from '../storage/storage.js';
import { getOwnField } from '../util/safe-record.js';
import { isPlainObject } from '../util/bson-value.js';
import { addBucketSourceOptions, openBucketSource } from './bucket-source.js';
import type { BucketSource, BucketSourceOptions } from './bucket-source.js';
import { measureBuckets } from './bucket-sizes.js';
import type { BucketSizes } from './bucket-sizes.js';
import type { CommandIo } from './io.js';
import { formatFullStats, formatNumber } from './summary.js';
import { renderKeyValueTable } from './table.js';

/** What the stored buckets are like. */
export interface StoredBucketStats extends BucketSizes {
  /** Distinct series (meta values). */
  readonly series: number;
  /** Buckets per format version. */
  readonly versions: Readonly<Record<1 | 2 | 3, number>>;
}

/**
 * Measure stored buckets and count their series and versions, in one pass.
 *
 * @param buckets - the bucket documents.
 * @param timeField - the time field.
 * @returns the statistics.
 */
export async function storedBucketStats(
  buckets: AsyncIterable<StoredBucket>,
  timeField: string,
): Promise<StoredBucketStats> {
  const series = new Set<string>();
  const versions = { 1: 0, 2: 0, 3: 0 };
  async function* counted(): AsyncGenerator<StoredBucket> {
    for await (const bucket of buckets) {
      versions[bucketVersion(bucket)]++;
      series.add(makeBucketMetadata(getOwnField(bucket, 'meta')).key);
      yield bucket;
    }
  }
  const sizes = await measureBuckets(counted(), timeField);
  return { ...sizes, series: series.size, versions };
}

/**
 * The stored-bucket statistics as a table.
 *
 * @param s - the statistics.
 * @returns the table.
 */
export function formatStoredBucketStats(s: StoredBucketStats): string {
  const per = (bytes: number): string =>
    s.measurements === 0 ? '0.0' : formatNumber(bytes / s.measurements, 1);
  return renderKeyValueTable(
    [
      ['buckets', formatNumber(s.buckets)],
      ['  version 1 (uncompressed)', formatNumber(s.versions[1])],
      ['  version 2 (compressed)', formatNumber(s.versions[2])],
      ['  version 3 (compressed, unsorted)', formatNumber(s.versions[3])],
      ['series', formatNumber(s.series)],
      ['measurements', formatNumber(s.measurements)],
      ['measurements per bucket', s.buckets === 0 ? '0.0' : formatNumber(s.measurements / s.buckets, 1)],
      ['bytes per measurement, as stored', per(s.storedBytes)],
      ['bytes per measurement, compressed', per(s.compressedBytes)],
      ['bytes per measurement, uncompressed', per(s.uncompressedBytes)],
    ],
    ['stored buckets', 'value'],
  );
}

/**
 * Run `stats` on an open source, and close it.
 *
 * @param source - the buckets.
 * @param collection - the collection's name (for the server's statistics' title).
 * @param io - where to print.
 */
export async function runStats(source: BucketSource, collection: string, io: CommandIo): Promise<void> {
  try {
    io.out(
      formatStoredBucketStats(
        await storedBucketStats(source.storage.find(source.bucketsNs, {}), source.timeField),
      ),
    );
    if (source.engineStats !== undefined) {
      const { stats, bucketCatalog } = await source.engineStats();
      io.out(formatFullStats(stats, bucketCatalog));
    }
    if (source.serverCollStats !== undefined) {
      const collStats = await source.serverCollStats();
      const timeseries = collStats?.timeseries;
      if (isPlainObject(timeseries)) {
        io.out(`server collStats.timeseries (${collection})`);
        io.out(renderKeyValueTable(Object.entries(timeseries)));
      }
      io.out(
        'The catalog statistics (serverStatus().bucketCatalog) live in the process that ingests: print them there, or use `tsbuckets ingest --stats`.',
      );
    }
  } finally {
    await source.close();
  }
}

/**
 * Register `tsbuckets stats`.
 *
 * @param program - the root command.
 * @param io - where to print.
 */
export function registerStats(program: Command, io: CommandIo): void {
  const command = program
    .command('stats')
    .description('collection and catalog statistics, and what the stored buckets are like');
  addBucketSourceOptions(command).action(async (file: string | undefined, options: BucketSourceOptions) => {
    await runStats(await openBucketSource(file, options, io), options.collection, io);
  });
}
