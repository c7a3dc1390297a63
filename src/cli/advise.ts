/**
 * `tsbuckets advise FILE | --uri ...`: the granularity advisor. It reads a sample of measurements (a file,
 * or a collection in MongoDB), measures each series' cadence and size, replays the sample through the
 * real catalog for each candidate bucketing (the three granularities and custom spans near the cadence),
 * and prints what each did — buckets, measurements per bucket, compressed bytes per measurement, closures
 * by reason, open-bucket memory, what time-range queries read — with a recommendation and its reason.
 *
 * @packageDocumentation
 */
import { Option } from 'commander';
import type { Command } from 'commander';

import { DEFAULT_SERVER_PARAMETERS } from '../options.js';
import { TimeseriesError } from '../errors.js';
import type { MongoDbLike } from '../mongodb/driver-shape.js';
import { parseFormat, parsePositiveInteger, parseQueryWidth } from './arguments.js';
import { formatAdvice } from './advisor/advice-report.js';
import { candidatesFor } from './advisor/candidates.js';
import { recommend } from './advisor/recommendation.js';
import { replayCandidate } from './advisor/replay.js';
import type { CandidateResult } from './advisor/replay.js';
import { profileSample } from './advisor/sample-profile.js';
import { serverTimeseriesFields } from './bucket-source.js';
import type { CommandIo } from './io.js';
import { convertTimeField, openMeasurementSource } from './readers.js';
import type { InputFormat } from './readers.js';

/** Options of `advise`. */
export interface AdviseOptions {
  /** Input format of a file. */
  readonly format?: InputFormat;
  /** The time field (with `--uri`: by default the collection's). */
  readonly timeField?: string;
  /** The metaField (with `--uri`: by default the collection's). */
  readonly metaField?: string;
  /** Measurements in the sample at most. */
  readonly sample: number;
  /** Width of the time-range queries, seconds. */
  readonly queryWidth: number;
  /** MongoDB connection string. */
  readonly uri?: string;
  /** Database. */
  readonly db?: string;
  /** The collection to sample (with `--uri`). */
  readonly collection?: string;
}

/** A sample and the fields it is read by. */
export interface Sample {
  /** Measurements in arrival order, the time field a `Date`. */
  readonly docs: Record<string, unknown>[];
  /** The time field. */
  readonly timeField: string;
  /** The metaField, if any. */
  readonly metaField: string | undefined;
  /** Lines or documents skipped. */
  readonly skipped: number;
}

async function sampleFromFile(path: string, options: AdviseOptions, io: CommandIo): Promise<Sample> {
  const timeField = options.timeField ?? 'ts';
  const source = openMeasurementSource(path, { format: options.format, timeField, stdin: io.stdin });
  const docs: Record<string, unknown>[] = [];
  let skipped = 0;
  for await (const record of source.records) {
    if (record.kind === 'bad') {
      skipped++;
      continue;
    }
    docs.push(record.doc);
    if (docs.length >= options.sample) break;
  }
  return { docs, timeField, metaField: options.metaField, skipped };
}

/**
 * Read a sample from a MongoDB collection: a time-series collection (its time field and metaField are
 * read from the server unless given) or a plain collection of measurements.
 *
 * @param db - the database.
 * @param name - the collection.
 * @param options - fields and sample size.
 * @returns the sample, in the collection's natural order.
 */
export async function sampleFromDb(
  db: MongoDbLike,
  name: string,
  options: Pick<AdviseOptions, 'timeField' | 'metaField' | 'sample'>,
): Promise<Sample> {
  const fields = await serverTimeseriesFields(db, name);
  const timeField = options.timeField ?? fields?.timeField ?? 'ts';
  const metaField = options.metaField ?? fields?.metaField;
  const docs: Record<string, unknown>[] = [];
  let skipped = 0;
  for await (const doc of db.collection(name).find({}, { limit: options.sample })) {
    const copy: Record<string, unknown> = { ...doc };
    delete copy._id;
    if (convertTimeField(copy, timeField) === undefined) docs.push(copy);
    else skipped++;
  }
  return { docs, timeField, metaField, skipped };
}

async function sampleFromMongo(uri: string, options: AdviseOptions): Promise<Sample> {
  const name = options.collection;
  if (name === undefined) throw new TimeseriesError('BadValue', '--collection is required with --uri');
  const { connectMongo } = await import('../mongodb/mongo-connection.js');
  const connection = await connectMongo(uri, options.db);
  try {
    return await sampleFromDb(connection.db, name, options);
  } finally {
    await connection.close();
  }
}

/**
 * Replay a sample for every candidate and produce the report.
 *
 * @param sample - the measurements.
 * @param queryWidthSeconds - the width of the time-range queries.
 * @returns the report's text.
 * @throws TimeseriesError when the sample is empty or has measurements the engine rejects.
 */
export async function adviseOnSample(sample: Sample, queryWidthSeconds: number): Promise<string> {
  if (sample.docs.length === 0) throw new TimeseriesError('BadValue', 'the sample has no measurements');
  const profile = profileSample(sample.docs, sample.timeField, sample.metaField);
  const results: CandidateResult[] = [];
  for (const candidate of candidatesFor(
    profile.cadenceMs,
    DEFAULT_SERVER_PARAMETERS.timeseriesBucketMaxCount,
  )) {
    results.push(
      await replayCandidate(
        {
          docs: sample.docs,
          profile,
          timeField: sample.timeField,
          metaField: sample.metaField,
          queryWidthSeconds,
        },
        candidate,
      ),
    );
  }
  return formatAdvice(
    profile,
    results,
    recommend(results, profile.cadenceMs, queryWidthSeconds),
    queryWidthSeconds,
  );
}

/**
 * Run `advise`.
 *
 * @param file - the sample file, or `undefined` with `--uri`.
 * @param options - the command's options.
 * @param io - where to print.
 * @throws TimeseriesError without a file and without `--uri`, or with both.
 */
export async function runAdvise(
  file: string | undefined,
  options: AdviseOptions,
  io: CommandIo,
): Promise<void> {
  const { uri } = options;
  if ((file === undefined) === (uri === undefined)) {
    throw new TimeseriesError('BadValue', 'give either a sample FILE or --uri with --collection');
  }
  const sample =
    uri === undefined ? await sampleFromFile(file ?? '-', options, io) : await sampleFromMongo(uri, options);
  if (sample.skipped > 0)
    io.warn(`${sample.skipped.toLocaleString('en-US')} lines skipped (not measurements)`);
  io.out(await adviseOnSample(sample, options.queryWidth));
}

/**
 * Register `tsbuckets advise`.
 *
 * @param program - the root command.
 * @param io - where to print.
 */
export function registerAdvise(program: Command, io: CommandIo): void {
  program
    .command('advise')
    .description('replay a sample through the catalog for each bucketing choice and recommend one')
    .argument('[file]', 'a sample: .ndjson/.json or .csv file (.gz too), or - for standard input')
    .option('--format <format>', 'ndjson or csv (default: from the extension)', parseFormat)
    .option('--time-field <name>', "the time field (default: ts, or the collection's)")
    .option('--meta-field <name>', "the metaField (default: none, or the collection's)")
    .option('--sample <n>', 'measurements to read at most', parsePositiveInteger, 100_000)
    .addOption(
      new Option('--query-width <duration>', 'width of the time-range queries: 90s, 15m, 1h, 1d')
        .argParser(parseQueryWidth)
        .default(3600, '1h'),
    )
    .option('--uri <uri>', 'sample a MongoDB collection instead of a file')
    .option('--db <name>', "database (default: the URI's, or test)")
    .option('--collection <name>', 'the collection to sample (a time-series collection or a plain one)')
    .action(async (file: string | undefined, options: AdviseOptions) => {
      await runAdvise(file, options, io);
    });
}
