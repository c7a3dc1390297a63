/**
 * Parsers of the `tsbuckets` command's option values, for commander: each returns the typed value or
 * throws commander's `InvalidArgumentError`, which commander reports as
 * `error: option '--measurements <n>' argument 'abc' is invalid. <reason>` and exits with status 1.
 *
 * @packageDocumentation
 */
import { InvalidArgumentError } from 'commander';

import { MAX_BUCKETING_SECONDS } from '../options.js';
import type { Granularity } from '../options.js';

/**
 * A positive integer (`1000`, `1_000` is refused, `1e6` accepted).
 *
 * @param value - the option's text.
 * @returns the integer.
 * @throws InvalidArgumentError when it is not a positive safe integer.
 */
export function parsePositiveInteger(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n) || n <= 0) {
    throw new InvalidArgumentError('Expected a positive integer.');
  }
  return n;
}

/**
 * A parser of positive integers up to `max`: options that size what the command allocates up front (the
 * writers it starts, the measurements of one call), where a typing slip would otherwise run out of memory.
 *
 * @param max - the largest value taken.
 * @param why - what the limit is, for the message.
 * @returns the parser.
 */
export function positiveIntegerUpTo(max: number, why: string): (value: string) => number {
  return (value) => {
    const n = parsePositiveInteger(value);
    if (n > max) throw new InvalidArgumentError(`Expected at most ${max.toLocaleString('en-US')} (${why}).`);
    return n;
  };
}

/** `--writers`: concurrent insert calls. */
export const parseWriters: (value: string) => number = positiveIntegerUpTo(1024, 'concurrent writers');
/** `--batch-size`: measurements per `insertMany`, at most what MongoDB takes in one write batch. */
export const parseBatchSize: (value: string) => number = positiveIntegerUpTo(
  100_000,
  "MongoDB's maxWriteBatchSize",
);

/**
 * A granularity preset.
 *
 * @param value - the option's text.
 * @returns `'seconds'`, `'minutes'` or `'hours'`.
 * @throws InvalidArgumentError for another value.
 */
export function parseGranularity(value: string): Granularity {
  if (value === 'seconds' || value === 'minutes' || value === 'hours') return value;
  throw new InvalidArgumentError("Expected 'seconds', 'minutes' or 'hours'.");
}

const kUnitSeconds: Readonly<Record<string, number>> = Object.freeze({ s: 1, m: 60, h: 3600, d: 86400 });

/**
 * A duration in whole seconds: a number of seconds, or a number with a unit `s`, `m`, `h` or `d`
 * (`90`, `90s`, `15m`, `2h`, `30d`).
 *
 * @param value - the option's text.
 * @returns the duration in seconds.
 * @throws InvalidArgumentError when it is not a positive whole number of seconds.
 */
export function parseDuration(value: string): number {
  const match = /^(\d+(?:\.\d+)?)([smhd]?)$/u.exec(value.trim());
  const seconds = match === null ? NaN : Number(match[1]) * (kUnitSeconds[match[2] || 's'] ?? NaN);
  if (!Number.isSafeInteger(seconds) || seconds <= 0) {
    throw new InvalidArgumentError("Expected a duration such as '90', '90s', '15m', '2h' or '30d'.");
  }
  return seconds;
}

/** The widest `--query-width`: a century. */
const kMaxQueryWidthSeconds = 36_500 * 86_400;

/**
 * `advise --query-width`: a duration of at most a century (wider ones ran past the dates a `Date` holds).
 *
 * @param value - the option's text.
 * @returns the width in seconds.
 * @throws InvalidArgumentError when it is not a duration from 1 s to 36 500 days.
 */
export function parseQueryWidth(value: string): number {
  const seconds = parseDuration(value);
  if (seconds > kMaxQueryWidthSeconds) throw new InvalidArgumentError('Expected a width of at most 36500d.');
  return seconds;
}

/**
 * A custom bucket span (`bucketMaxSpanSeconds` = `bucketRoundingSeconds`): a duration of at most 365 days.
 *
 * @param value - the option's text.
 * @returns the span in seconds.
 * @throws InvalidArgumentError when it is not a duration from 1 s to 365 days.
 */
export function parseSpan(value: string): number {
  const seconds = parseDuration(value);
  if (seconds > MAX_BUCKETING_SECONDS) {
    throw new InvalidArgumentError(`Expected a span of at most ${MAX_BUCKETING_SECONDS} seconds (365 days).`);
  }
  return seconds;
}

/**
 * A duration as text with the largest unit that divides it (`3600` → `1h`, `90` → `90s`).
 *
 * @param seconds - a whole number of seconds.
 * @returns the text.
 */
export function formatDuration(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
  ] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size}${unit}`;
  }
  return `${seconds}s`;
}

/**
 * A `MongoStorage` mode.
 *
 * @param value - the option's text.
 * @returns `'timeseries'` or `'buckets'`.
 * @throws InvalidArgumentError for another value.
 */
export function parseMode(value: string): 'timeseries' | 'buckets' {
  if (value === 'timeseries' || value === 'buckets') return value;
  throw new InvalidArgumentError("Expected 'timeseries' or 'buckets'.");
}

/**
 * How `MongoStorage` keeps open compressed buckets on the server (`openBucketForm`).
 *
 * @param value - the option's text.
 * @returns `'measured'`, `'compressed'` or `'uncompressed'`.
 * @throws InvalidArgumentError for another value.
 */
export function parseOpenBucketForm(value: string): 'measured' | 'compressed' | 'uncompressed' {
  if (value === 'measured' || value === 'compressed' || value === 'uncompressed') return value;
  throw new InvalidArgumentError("Expected 'measured', 'compressed' or 'uncompressed'.");
}

/**
 * An input format.
 *
 * @param value - the option's text.
 * @returns `'ndjson'` or `'csv'`.
 * @throws InvalidArgumentError for another value.
 */
export function parseFormat(value: string): 'ndjson' | 'csv' {
  if (value === 'ndjson' || value === 'csv') return value;
  throw new InvalidArgumentError("Expected 'ndjson' or 'csv'.");
}
