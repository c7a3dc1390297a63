/**
 * `tsbuckets inspect`: bucket documents as tables — the `_id`, meta and `control` (per field: min and
 * max), then the measurements with every column decompressed, whatever the bucket's version.
 *
 * @packageDocumentation
 */
import { ObjectId } from 'bson';
import type { Command } from 'commander';

import { decompressBucket } from '../bucket-format/bucket-compression.js';
import { normalizeMetadata } from '../catalog/bucket-metadata.js';
import { TimeseriesError } from '../errors.js';
import type { StoredBucket } from '../storage/storage.js';
import { isPlainObject } from '../util/bson-value.js';
import { getOwnField } from '../util/safe-record.js';
import { parsePositiveInteger } from './arguments.js';
import { addBucketSourceOptions, openBucketSource } from './bucket-source.js';
import type { BucketSource, BucketSourceOptions } from './bucket-source.js';
import type { CommandIo } from './io.js';
import { parseExtendedJson } from './readers.js';
import { formatCell, formatValue, renderTable } from './table.js';

/** Options of `inspect`. */
export interface InspectOptions extends BucketSourceOptions {
  /** One bucket by `_id` (hex). */
  readonly bucket?: string;
  /** The buckets of one series: its meta value as (Extended) JSON. */
  readonly series?: string;
  /** Buckets printed at most. */
  readonly limit: number;
  /** Measurements printed per bucket at most. */
  readonly rows: number;
}

/**
 * The bucket filter of `--bucket` and `--series`.
 *
 * @param options - the command's options.
 * @returns the filter.
 * @throws TimeseriesError for an `_id` that is not 24 hex digits, or a series that is not JSON.
 */
export function inspectFilter(options: Pick<InspectOptions, 'bucket' | 'series'>): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  if (options.bucket !== undefined) {
    if (!ObjectId.isValid(options.bucket) || options.bucket.length !== 24) {
      throw new TimeseriesError(
        'BadValue',
        `--bucket: '${options.bucket}' is not an ObjectId (24 hex digits)`,
      );
    }
    filter._id = ObjectId.createFromHexString(options.bucket);
  }
  if (options.series !== undefined) {
    let meta: unknown;
    try {
      meta = parseExtendedJson(options.series);
    } catch (error) {
      throw new TimeseriesError('BadValue', `--series: not JSON: ${(error as Error).message}`);
    }
    // Buckets store the meta normalised (fields sorted), and MongoDB compares documents field by field.
    filter.meta = normalizeMetadata(meta);
  }
  return filter;
}

/**
 * One bucket as text: a header, a control table, and a table of its first `rows` measurements.
 *
 * @param bucket - a stored bucket document.
 * @param timeField - the collection's time field (its column comes first).
 * @param rows - measurements printed at most.
 * @returns the text.
 * @throws TimeseriesError for a bucket that cannot be decompressed.
 */
export function formatBucket(bucket: StoredBucket, timeField: string, rows: number): string {
  const control = getOwnField(bucket, 'control');
  const controlObj = isPlainObject(control) ? control : {};
  const min = isPlainObject(controlObj.min) ? controlObj.min : {};
  const max = isPlainObject(controlObj.max) ? controlObj.max : {};
  const data = getOwnField(decompressBucket(bucket), 'data');
  const columns = isPlainObject(data) ? data : {};
  const names = Object.keys(columns).sort((a, b) => (a === timeField ? -1 : b === timeField ? 1 : 0));
  const time = columns[timeField];
  const rowKeys = isPlainObject(time) ? Object.keys(time) : [];
  const lines = [
    `bucket ${formatCell(getOwnField(bucket, '_id'))}: version ${formatCell(controlObj.version)}, ${rowKeys.length} measurements`,
  ];
  if (Object.hasOwn(bucket, 'meta')) lines.push(`meta: ${formatValue(getOwnField(bucket, 'meta'))}`);
  lines.push(
    renderTable(
      ['field', 'control.min', 'control.max'],
      Object.keys(min).map((f) => [f, formatCell(min[f]), formatCell(max[f])]),
      ['left', 'left', 'left'],
    ),
  );
  const shown = rowKeys.slice(0, rows);
  lines.push(
    renderTable(
      ['#', ...names],
      shown.map((key) => [
        key,
        ...names.map((name) => {
          const column = columns[name];
          return isPlainObject(column) ? formatCell(column[key]) : '';
        }),
      ]),
      ['right', ...names.map(() => 'left' as const)],
    ),
  );
  if (rowKeys.length > shown.length) lines.push(`… ${rowKeys.length - shown.length} more measurements`);
  return lines.join('\n');
}

/**
 * Run `inspect` on an open source, and close it.
 *
 * @param source - the buckets.
 * @param filter - the bucket filter ({@link inspectFilter}).
 * @param options - the command's options.
 * @param io - where to print.
 */
export async function runInspect(
  source: BucketSource,
  filter: Readonly<Record<string, unknown>>,
  options: Pick<InspectOptions, 'limit' | 'rows'>,
  io: CommandIo,
): Promise<void> {
  try {
    const total = await source.storage.countDocuments(source.bucketsNs, filter);
    let printed = 0;
    for await (const bucket of source.storage.find(source.bucketsNs, filter, {
      sort: { _id: 1 },
      limit: options.limit,
    })) {
      if (printed > 0) io.out('');
      io.out(formatBucket(bucket, source.timeField, options.rows));
      printed++;
    }
    io.out(
      printed === 0
        ? 'no bucket matches'
        : `${printed} of ${total.toLocaleString('en-US')} matching buckets shown (--limit ${options.limit})`,
    );
  } finally {
    await source.close();
  }
}

/**
 * Register `tsbuckets inspect`.
 *
 * @param program - the root command.
 * @param io - where to print.
 */
export function registerInspect(program: Command, io: CommandIo): void {
  const command = program
    .command('inspect')
    .description('print bucket documents as tables: control, and the measurements decompressed');
  addBucketSourceOptions(command)
    .option('--bucket <id>', 'one bucket by _id (24 hex digits)')
    .option('--series <json>', 'the buckets of one series: its meta value as JSON')
    .option('--limit <n>', 'buckets to print', parsePositiveInteger, 3)
    .option('--rows <n>', 'measurements to print per bucket', parsePositiveInteger, 10)
    .action(async (file: string | undefined, options: InspectOptions) => {
      // The filter is checked before connecting or ingesting.
      const filter = inspectFilter(options);
      await runInspect(await openBucketSource(file, options, io), filter, options, io);
    });
}
