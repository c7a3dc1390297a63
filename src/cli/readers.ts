/**
 * Reading measurements from files for the `tsbuckets` command: NDJSON (one Extended JSON document per
 * line) and CSV (a header row, one measurement per row), from a path or `-` for standard input.
 *
 * A reader yields one {@link ReadRecord} per non-empty line: a measurement, or a bad line with its line
 * number and the reason, so that the caller decides whether a bad line is fatal (`--strict`). The time
 * field of each measurement is converted to a `Date` (from an Extended JSON date, an ISO 8601 string, or
 * epoch milliseconds).
 *
 * @packageDocumentation
 */
import { createReadStream, statSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { createInterface } from 'node:readline';

import { EJSON } from 'bson';
import { parse as parseCsv } from 'csv-parse';
import type { CsvError, InfoField } from 'csv-parse';

import { isPlainObject } from '../util/bson-value.js';
import { defineField } from '../util/safe-record.js';

/** The input formats. */
export type InputFormat = 'ndjson' | 'csv';

/** One line of input. */
export type ReadRecord =
  | {
      readonly kind: 'measurement';
      /** 1-based line number in the input. */
      readonly line: number;
      /** The measurement, its time field a `Date`. */
      readonly doc: Record<string, unknown>;
    }
  | {
      readonly kind: 'bad';
      /** 1-based line number in the input. */
      readonly line: number;
      /** Why the line was not a measurement. */
      readonly reason: string;
    };

/** An opened input: its records and how far the reading has got. */
export interface MeasurementSource {
  /** The records, in input order. */
  readonly records: AsyncIterable<ReadRecord>;
  /** Bytes read so far. */
  bytesRead(): number;
  /** The input's size in bytes, or `undefined` for standard input. */
  readonly totalBytes: number | undefined;
}

/** Options of {@link openMeasurementSource}. */
export interface SourceOptions {
  /** The format; by default from the file extension (`.csv` is CSV, anything else NDJSON). */
  readonly format?: InputFormat | undefined;
  /** The time field, converted to a `Date`. */
  readonly timeField: string;
  /** Standard input, for the path `-` (injected by tests). */
  readonly stdin?: Readable;
}

/**
 * The format of a path: `.csv` is CSV, everything else (and `-`) NDJSON.
 *
 * @param path - a file path or `-`.
 * @returns the format.
 */
export function formatOfPath(path: string): InputFormat {
  return path.toLowerCase().endsWith('.csv') ? 'csv' : 'ndjson';
}

/**
 * Open a file (or `-`, standard input) as measurements.
 *
 * @param path - a file path, or `-`.
 * @param options - format and time field.
 * @returns the records and the reading progress.
 * @throws the file system's error (`ENOENT`...) when the file cannot be opened.
 */
export function openMeasurementSource(path: string, options: SourceOptions): MeasurementSource {
  const format = options.format ?? formatOfPath(path);
  const stdin = path === '-';
  const totalBytes = stdin ? undefined : statSync(path).size;
  const file = stdin ? undefined : createReadStream(path);
  const stream: Readable = file ?? options.stdin ?? process.stdin;
  const records =
    format === 'csv' ? readCsv(stream, options.timeField) : readNdjson(stream, options.timeField);
  return { records, bytesRead: () => file?.bytesRead ?? 0, totalBytes };
}

/**
 * Convert the time field of `doc` to a `Date` in place.
 *
 * @param doc - a measurement.
 * @param timeField - the time field.
 * @returns `undefined` when done, or why the value is not a time.
 */
export function convertTimeField(doc: Record<string, unknown>, timeField: string): string | undefined {
  if (!Object.hasOwn(doc, timeField)) return `no '${timeField}' field`;
  const value = doc[timeField];
  if (value instanceof Date) {
    return Number.isNaN(value.getTime()) ? `'${timeField}' is an invalid date` : undefined;
  }
  let ms: number;
  if (typeof value === 'number') ms = value;
  else if (typeof value === 'string') ms = Date.parse(value);
  else return `'${timeField}' is not a date, an ISO 8601 string or epoch milliseconds`;
  const date = new Date(ms);
  if (Number.isNaN(date.getTime())) return `'${timeField}' is not a valid time: ${JSON.stringify(value)}`;
  defineField(doc, timeField, date);
  return undefined;
}

async function* readNdjson(stream: Readable, timeField: string): AsyncGenerator<ReadRecord> {
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let line = 0;
  for await (const text of lines) {
    line++;
    if (text.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = EJSON.parse(text, { relaxed: true });
    } catch (error) {
      yield { kind: 'bad', line, reason: `not JSON: ${(error as Error).message}` };
      continue;
    }
    if (!isPlainObject(parsed)) {
      yield { kind: 'bad', line, reason: 'not a JSON object' };
      continue;
    }
    const reason = convertTimeField(parsed, timeField);
    yield reason === undefined ? { kind: 'measurement', line, doc: parsed } : { kind: 'bad', line, reason };
  }
}

/** A CSV cell: empty is absent, numbers and booleans are typed, anything else a string. */
function castCell(value: string, context: InfoField): unknown {
  if (context.header) return value;
  if (value === '') return undefined;
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/u.test(value)) return Number(value);
  return value;
}

async function* readCsv(stream: Readable, timeField: string): AsyncGenerator<ReadRecord> {
  // Rows that csv-parse rejects (a wrong number of columns, a broken quote) are skipped and reported here
  // with their line numbers, in order with the rows around them.
  const skipped: ReadRecord[] = [];
  const parser = stream.pipe(
    parseCsv({
      columns: true,
      cast: castCell,
      info: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
      on_skip: (error: CsvError | undefined) => {
        if (error !== undefined) {
          const line = typeof error.lines === 'number' ? error.lines : 0;
          skipped.push({ kind: 'bad', line, reason: error.message });
        }
        return undefined;
      },
    }),
  );
  for await (const item of parser as AsyncIterable<{
    readonly record: Record<string, unknown>;
    readonly info: { readonly lines: number };
  }>) {
    yield* skipped.splice(0);
    const doc: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(item.record)) {
      if (value !== undefined) defineField(doc, name, value);
    }
    const line = item.info.lines;
    const reason = convertTimeField(doc, timeField);
    yield reason === undefined ? { kind: 'measurement', line, doc } : { kind: 'bad', line, reason };
  }
  yield* skipped;
}
