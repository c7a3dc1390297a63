/**
 * Reading measurements from files for the `tsbuckets` command: NDJSON (one Extended JSON document per
 * line; numbers, strings and booleans as in JSON, other BSON types as canonical Extended JSON
 * `{"$numberLong": "22"}`) and CSV (a header row, one measurement per row), from a path or `-` for standard input.
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

import { bsonNumberValue, isPlainObject } from '../util/bson-value.js';
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
  const number = bsonNumberValue(value);
  let ms: number;
  if (number !== undefined) ms = number;
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
  for await (const read of lines) {
    line++;
    // A byte order mark before the first line (editors on Windows write one) is not part of the JSON.
    const text = line === 1 && read.startsWith('\uFEFF') ? read.slice(1) : read;
    if (text.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = parseExtendedJson(text);
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

/**
 * Parse Extended JSON keeping every BSON type it names (`{"$numberLong": "22"}` is a `Long`), with plain
 * JSON numbers as JS numbers.
 *
 * @param text - one JSON value.
 * @returns the value.
 * @throws SyntaxError (or the `bson` package's error) when the text is not Extended JSON.
 */
export function parseExtendedJson(text: string): unknown {
  return plainNumbers(EJSON.parse(text, { relaxed: false }));
}

/**
 * Canonical Extended JSON keeps every type (`{"$numberLong": "22"}` stays a `Long`) but wraps plain JSON
 * numbers too; unwrap those that serialize to the same BSON as a JS number: every `Int32`, and a
 * `Double` that is not integral (an integral one would be written back as an int32).
 */
function plainNumbers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plainNumbers);
  if (value === null || typeof value !== 'object') return value;
  const bsontype = (value as { _bsontype?: unknown })._bsontype;
  if (bsontype === 'Int32') return (value as { value: number }).value;
  if (bsontype === 'Double') {
    const n = (value as { value: number }).value;
    return Number.isInteger(n) ? value : n;
  }
  if (bsontype !== undefined || !isPlainObject(value)) return value;
  for (const key of Object.keys(value)) defineField(value, key, plainNumbers(value[key]));
  return value;
}

/** A CSV cell: empty is absent, numbers and booleans are typed, anything else a string. */
function castCell(value: string, context: InfoField): unknown {
  // The header row is cast too (rows are arrays): a header cell keeps its text.
  if (context.records === 0) return value;
  if (value === '') return undefined;
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/u.test(value)) return Number(value);
  return value;
}

async function* readCsv(stream: Readable, timeField: string): AsyncGenerator<ReadRecord> {
  // Rows are read as arrays and matched to the header here, so that a row with the wrong number of cells
  // is reported in order with the others. Rows csv-parse itself rejects (a broken quote) are skipped and
  // reported before the next row.
  const skipped: ReadRecord[] = [];
  const parser = stream.pipe(
    parseCsv({
      // A byte order mark before the header (spreadsheets' "CSV UTF-8" starts with one) is not part of
      // its first name.
      bom: true,
      cast: castCell,
      info: true,
      skip_empty_lines: true,
      relax_column_count: true,
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
  let header: string[] | undefined;
  for await (const item of parser as AsyncIterable<{
    readonly record: unknown[];
    readonly info: { readonly lines: number };
  }>) {
    yield* skipped.splice(0);
    const line = item.info.lines;
    if (header === undefined) {
      header = item.record.map((cell) => (typeof cell === 'string' ? cell : ''));
      continue;
    }
    if (item.record.length !== header.length) {
      yield {
        kind: 'bad',
        line,
        reason: `${item.record.length} cells for ${header.length} columns`,
      };
      continue;
    }
    const doc: Record<string, unknown> = {};
    for (let i = 0; i < header.length; i++) {
      const value = item.record[i];
      if (value !== undefined) defineField(doc, header[i] ?? '', value);
    }
    const reason = convertTimeField(doc, timeField);
    yield reason === undefined ? { kind: 'measurement', line, doc } : { kind: 'bad', line, reason };
  }
  yield* skipped;
}
