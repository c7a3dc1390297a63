/**
 * `tsbuckets ingest FILE`: load NDJSON or CSV measurements (`-`: standard input) into a time-series
 * collection, embedded or in MongoDB (`--uri`), with a progress bar (rate and ETA) and a summary. Bad
 * lines are reported with their line numbers on standard error and skipped, unless `--strict`.
 *
 * @packageDocumentation
 */
import { Option } from 'commander';
import type { Command } from 'commander';

import { TimeseriesError } from '../errors.js';
import type { Granularity } from '../options.js';
import {
  parseBatchSize,
  parseFormat,
  parseGranularity,
  parseMode,
  parseOpenBucketForm,
  parseSpan,
  parseWriters,
} from './arguments.js';
import { measureBuckets } from './bucket-sizes.js';
import { openTarget } from './collection-target.js';
import type { OpenTarget } from './collection-target.js';
import { ingestRecords } from './ingest-runner.js';
import type { IngestRunResult } from './ingest-runner.js';
import type { CommandIo } from './io.js';
import { startProgress } from './progress.js';
import { openMeasurementSource } from './readers.js';
import type { InputFormat } from './readers.js';
import { formatFullStats, formatIngestSummary } from './summary.js';

/** Options shared by the commands that read a file into a collection. */
export interface FileCollectionOptions {
  /** Input format; by default from the extension. */
  readonly format?: InputFormat;
  /** The time field. */
  readonly timeField: string;
  /** The metaField. */
  readonly metaField?: string;
  /** A granularity preset. */
  readonly granularity?: Granularity;
  /** A custom span in seconds. */
  readonly span?: number;
  /** The collection. */
  readonly collection: string;
}

/** Options of `ingest`. */
export interface IngestOptions extends FileCollectionOptions {
  /** MongoDB connection string. */
  readonly uri?: string;
  /** Database. */
  readonly db?: string;
  /** `MongoStorage` mode. */
  readonly mode: 'timeseries' | 'buckets';
  /** How `MongoStorage` keeps open compressed buckets on the server. */
  readonly openBucketForm: 'measured' | 'compressed' | 'uncompressed';
  /** Measurements per `insertMany`. */
  readonly batchSize: number;
  /** Concurrent writers. */
  readonly writers: number;
  /** Stop at the first bad line. */
  readonly strict: boolean;
  /** Print every counter. */
  readonly stats: boolean;
}

/** How many rejected lines are printed one by one; the rest are counted. */
const kMaxReportedLines = 20;

/**
 * Add the options naming the input and the collection's bucketing to a command.
 *
 * @param command - a command.
 * @returns the command.
 */
export function addFileCollectionOptions(command: Command): Command {
  return command
    .addOption(
      new Option('--format <format>', 'ndjson or csv (default: from the extension)').argParser(parseFormat),
    )
    .option('--time-field <name>', 'the time field (a date, an ISO 8601 string or epoch milliseconds)', 'ts')
    .option('--meta-field <name>', 'the metaField: which field identifies a series')
    .addOption(
      new Option('--granularity <granularity>', 'seconds, minutes or hours (default: seconds)')
        .argParser(parseGranularity)
        .conflicts('span'),
    )
    .addOption(
      new Option(
        '--span <duration>',
        'custom bucket span (bucketMaxSpanSeconds = bucketRoundingSeconds): 90s, 15m, 2h, 30d',
      ).argParser(parseSpan),
    )
    .option('--collection <name>', 'the time-series collection', 'measurements');
}

/**
 * Read a file into a collection, reporting progress and rejected lines.
 *
 * @param path - the file, or `-`.
 * @param target - the open collection.
 * @param options - input and batching options.
 * @param io - where to print.
 * @returns the run's result.
 */
export async function loadFile(
  path: string,
  target: OpenTarget,
  options: FileCollectionOptions & Pick<IngestOptions, 'batchSize' | 'writers' | 'strict'>,
  io: CommandIo,
): Promise<IngestRunResult> {
  const source = openMeasurementSource(path, {
    format: options.format,
    timeField: options.timeField,
    stdin: io.stdin,
  });
  const progress = startProgress({ total: source.totalBytes, unit: 'bytes', stream: io.err });
  let result: IngestRunResult;
  try {
    result = await ingestRecords(target.coll, source.records, {
      batchSize: options.batchSize,
      writers: options.writers,
      onRejected: options.strict ? 'strict' : 'skip',
      onProgress: (measurements) => {
        progress.update(source.bytesRead(), { measurements });
      },
    });
  } finally {
    progress.stop();
  }
  for (const r of result.rejected.slice(0, kMaxReportedLines)) io.warn(`${path}:${r.line}: ${r.reason}`);
  if (result.rejected.length > kMaxReportedLines) {
    io.warn(`${path}: ${result.rejected.length - kMaxReportedLines} more rejected lines`);
  }
  if (result.outcome === 'stopped') {
    throw new TimeseriesError(
      'BadValue',
      `stopped at the first rejected line (--strict); ${result.inserted.toLocaleString('en-US')} measurement${result.inserted === 1 ? ' was' : 's were'} stored before it`,
    );
  }
  return result;
}

/**
 * Run `ingest`.
 *
 * @param path - the file, or `-`.
 * @param options - the command's options.
 * @param io - where to print.
 */
export async function runIngest(path: string, options: IngestOptions, io: CommandIo): Promise<void> {
  const target = await openTarget({ ...options, uri: options.uri, db: options.db });
  try {
    const result = await loadFile(path, target, options, io);
    const stats = await target.coll.stats();
    const status = target.engine.serverStatus().bucketCatalog;
    const sizes = await measureBuckets(target.coll.buckets.find(), options.timeField);
    io.out(
      formatIngestSummary({
        inserted: result.inserted,
        seconds: result.seconds,
        stats,
        openBuckets: status.numOpenBuckets,
        sizes,
      }),
    );
    if (result.rejected.length > 0)
      io.out(`rejected:    ${result.rejected.length.toLocaleString('en-US')} lines`);
    if (options.stats) io.out(formatFullStats(stats, status));
    // Every line rejected (a CSV read as NDJSON, the wrong --time-field): a failure, not an empty success.
    if (result.inserted === 0 && result.rejected.length > 0) {
      throw new TimeseriesError(
        'BadValue',
        `every line of ${path === '-' ? 'standard input' : path} was rejected`,
      );
    }
  } finally {
    await target.close();
  }
}

/**
 * Add `--uri`, `--db` and `--mode` to a command.
 *
 * @param command - a command.
 * @returns the command.
 */
export function addMongoOptions(command: Command): Command {
  return command
    .option('--uri <uri>', 'MongoDB connection string (default: the embedded engine)')
    .option('--db <name>', "database (default: the URI's, or test)")
    .addOption(
      new Option('--mode <mode>', 'MongoStorage mode: timeseries or buckets')
        .argParser(parseMode)
        .default('timeseries'),
    );
}

/**
 * Register `tsbuckets ingest`.
 *
 * @param program - the root command.
 * @param io - where to print.
 */
export function registerIngest(program: Command, io: CommandIo): void {
  const command = program
    .command('ingest')
    .description('load NDJSON or CSV measurements into a time-series collection')
    .argument('<file>', 'an .ndjson/.json or .csv file (.gz too), or - for standard input');
  addFileCollectionOptions(command);
  addMongoOptions(command);
  command
    .addOption(
      new Option(
        '--open-bucket-form <form>',
        'with --uri, how open buckets are kept on the server: measured, compressed or uncompressed',
      )
        .argParser(parseOpenBucketForm)
        .default('measured'),
    )
    .option('--batch-size <n>', 'measurements per insertMany (at most 100000)', parseBatchSize, 1000)
    .option('--writers <n>', 'concurrent writers (at most 1024)', parseWriters, 4)
    .option('--strict', 'stop at the first bad line', false)
    .option('--stats', 'also print every counter', false)
    .action(async (file: string, options: IngestOptions) => {
      await runIngest(file, options, io);
    });
}
