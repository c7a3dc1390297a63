/**
 * Reading measurements from files for the `tsbuckets` command: NDJSON (one Extended JSON document per
 * line; numbers, strings and booleans as in JSON, other BSON types as canonical Extended JSON
 * `{"$numberLong": "22"}`) or one JSON array of such documents, and CSV (a header row, one measurement per
 * row), from a path or `-` for standard input.
 *
 * A reader yields one {@link ReadRecord} per non-empty line (per element of a JSON array): a measurement,
 * or a bad line with its line number and the reason, so that the caller decides whether a bad line is
 * fatal (`--strict`). The time field of each measurement is converted to a `Date` (from an Extended JSON
 * date, an ISO 8601 string, or epoch milliseconds). A `.gz` file is read through gunzip.
 *
 * @packageDocumentation
 */
import { createReadStream, statSync } from 'node:fs';
import { pipeline } from 'node:stream';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';

import { EJSON } from 'bson';
import { parse as parseCsv } from 'csv-parse';
import type { CsvError, InfoField } from 'csv-parse';

import { bsonNumberValue, isPlainObject } from '../util/bson-value.js';
import { defineField } from '../util/safe-record.js';
import { parseIsoTime } from './iso-time.js';

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
 * The format of a path: `.csv` (or `.csv.gz`) is CSV, everything else (and `-`) NDJSON.
 *
 * @param path - a file path or `-`.
 * @returns the format.
 */
export function formatOfPath(path: string): InputFormat {
  const name = path.toLowerCase();
  return name.endsWith('.csv') || name.endsWith('.csv.gz') ? 'csv' : 'ndjson';
}

/** Whether a path names a gzip-compressed file (`.gz`), read through `gunzip`. */
function isGzipPath(path: string): boolean {
  return path.toLowerCase().endsWith('.gz');
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
  // A compressed file's progress is counted in its compressed bytes, as its size is. Through `pipeline`,
  // a read error (or a corrupt archive) ends the stream the reader iterates with that error.
  const stream: Readable =
    file === undefined
      ? (options.stdin ?? process.stdin)
      : isGzipPath(path)
        ? pipeline(file, createGunzip(), leaveToReader)
        : file;
  const records = format === 'csv' ? readCsv(stream, options.timeField) : readJson(stream, options.timeField);
  return { records: namingErrors(records, path), bytesRead: () => file?.bytesRead ?? 0, totalBytes };
}

/** The callback `pipeline` requires: an error also ends the last stream, and its reader reports it. */
function leaveToReader(): void {
  // Nothing to do here.
}

/**
 * `records`, a read error (a system or zlib error: it has a `code`) reported with the input's name and
 * the same `code`; anything else is thrown as it is.
 */
async function* namingErrors(records: AsyncIterable<ReadRecord>, path: string): AsyncGenerator<ReadRecord> {
  try {
    yield* records;
  } catch (error) {
    const code = (error as { code?: unknown } | undefined)?.code;
    if (!(error instanceof Error) || typeof code !== 'string') throw error;
    const name = path === '-' ? 'standard input' : path;
    throw Object.assign(new Error(`${name}: ${error.message}`, { cause: error }), { code });
  }
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
  else if (typeof value === 'string') ms = parseIsoTime(value) ?? Number.NaN;
  else return `'${timeField}' is not a date, an ISO 8601 string or epoch milliseconds`;
  const date = new Date(ms);
  if (Number.isNaN(date.getTime())) return `'${timeField}' is not a valid time: ${JSON.stringify(value)}`;
  defineField(doc, timeField, date);
  return undefined;
}

/**
 * NDJSON, or one JSON array of documents (what Compass and `mongoexport --jsonArray` write): an input
 * whose first character that is not white space is `[` is read as an array, element by element.
 */
async function* readJson(stream: Readable, timeField: string): AsyncGenerator<ReadRecord> {
  const texts = textOf(stream);
  // Read until the first character that is not white space, by hand: leaving a `for await` loop early
  // would close the stream.
  let head = '';
  let next = await texts.next();
  while (!next.done) {
    head += next.value;
    if (head.trimStart() !== '') break;
    next = await texts.next();
  }
  const chunks = prepend(head, texts);
  yield* head.trimStart().startsWith('[') ? readJsonArray(chunks, timeField) : readNdjson(chunks, timeField);
}

/**
 * The text of a stream of bytes (or of strings), decoded as UTF-8 across chunks, without the byte order
 * mark that may start it (editors on Windows write one; a U+FEFF anywhere else is kept).
 */
async function* textOf(stream: Readable): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  let started = false;
  for await (const chunk of stream as AsyncIterable<Uint8Array | string>) {
    let text = typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    if (!started && text !== '') {
      started = true;
      if (text.startsWith('\uFEFF')) text = text.slice(1);
    }
    if (text !== '') yield text;
  }
  const rest = decoder.decode();
  if (rest !== '') yield rest;
}

/** `head`, then the rest of `texts`. */
async function* prepend(head: string, texts: AsyncGenerator<string>): AsyncGenerator<string> {
  if (head !== '') yield head;
  yield* texts;
}

/** One document per line (`\n` or `\r\n`); blank lines are skipped. */
async function* readNdjson(chunks: AsyncIterable<string>, timeField: string): AsyncGenerator<ReadRecord> {
  let pending = '';
  let line = 0;
  for await (const text of chunks) {
    pending += text;
    let start = 0;
    for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n', start)) {
      line++;
      const record = lineRecord(pending.slice(start, end), line, timeField);
      if (record !== undefined) yield record;
      start = end + 1;
    }
    pending = pending.slice(start);
  }
  if (pending !== '') {
    const record = lineRecord(pending, line + 1, timeField);
    if (record !== undefined) yield record;
  }
}

/** The record of one NDJSON line, `undefined` for a blank one. */
function lineRecord(text: string, line: number, timeField: string): ReadRecord | undefined {
  const content = text.endsWith('\r') ? text.slice(0, -1) : text;
  return content.trim() === '' ? undefined : jsonRecord(content, line, timeField);
}

/** A measurement from the text of one JSON document, or why it is not one. */
function jsonRecord(text: string, line: number, timeField: string): ReadRecord {
  let parsed: unknown;
  try {
    parsed = parseExtendedJson(text);
  } catch (error) {
    return { kind: 'bad', line, reason: `not JSON: ${(error as Error).message}` };
  }
  if (!isPlainObject(parsed)) return { kind: 'bad', line, reason: 'not a JSON object' };
  const reason = convertTimeField(parsed, timeField);
  return reason === undefined ? { kind: 'measurement', line, doc: parsed } : { kind: 'bad', line, reason };
}

const kNewline = 0x0a;
const kQuote = 0x22;
const kBackslash = 0x5c;
const kComma = 0x2c;
const kOpenBracket = 0x5b;
const kCloseBracket = 0x5d;
const kOpenBrace = 0x7b;
const kCloseBrace = 0x7d;

/** JSON's white space: space, tab, line feed, carriage return. */
function isJsonWhiteSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === kNewline || c === 0x0d;
}

/**
 * The elements of one JSON array, each parsed as the document of an NDJSON line and numbered by the line
 * it starts on, without holding more than one element's text: the array is split at its top-level commas
 * (outside strings and nested values) as the text arrives. A malformed element is a bad record and the
 * next one is read; text after the array's end, or an array that never ends, is a last bad record.
 */
async function* readJsonArray(chunks: AsyncIterable<string>, timeField: string): AsyncGenerator<ReadRecord> {
  let line = 1;
  // Nesting: 0 before the array's `[`, 1 between its elements, more inside one; -1 after its `]`.
  let depth = 0;
  let inString = false;
  let escaped = false;
  let elements = 0;
  // The current element's text from earlier chunks, and the line of its first character (0: none yet).
  let element = '';
  let elementLine = 0;
  for await (const text of chunks) {
    // Where the current element's text starts in this chunk.
    let from = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === kNewline) line++;
      if (depth < 0) {
        if (isJsonWhiteSpace(c)) continue;
        yield { kind: 'bad', line, reason: 'text after the JSON array' };
        return;
      }
      if (inString) {
        if (escaped) escaped = false;
        else if (c === kBackslash) escaped = true;
        else if (c === kQuote) inString = false;
        continue;
      }
      if (depth === 0) {
        // Only white space comes before the `[` (that is how the array was recognised).
        if (c === kOpenBracket) {
          depth = 1;
          from = i + 1;
        }
        continue;
      }
      const separator = depth === 1 && (c === kComma || c === kCloseBracket);
      if (!separator) {
        if (elementLine === 0 && !isJsonWhiteSpace(c)) elementLine = line;
        if (c === kQuote) inString = true;
        else if (c === kOpenBrace || c === kOpenBracket) depth++;
        // An unbalanced `}` stays in the element's text, whose parse then fails.
        else if ((c === kCloseBrace || c === kCloseBracket) && depth > 1) depth--;
        continue;
      }
      const content = element + text.slice(from, i);
      element = '';
      from = i + 1;
      if (c === kCloseBracket) depth = -1;
      // `[]`: no element.
      if (depth < 0 && elements === 0 && content.trim() === '') continue;
      elements++;
      yield content.trim() === ''
        ? { kind: 'bad', line, reason: 'an empty array element' }
        : jsonRecord(content, elementLine, timeField);
      elementLine = 0;
    }
    if (depth > 0) element += text.slice(from);
  }
  if (depth >= 0) yield { kind: 'bad', line, reason: 'the JSON array is not closed' };
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
  if (!text.includes('"$date"')) return plainNumbers(EJSON.parse(text, { relaxed: false }));
  // A `{"$date": "<ISO 8601>"}` is read as the time field is (UTC without an offset, impossible dates
  // refused) rather than by `Date.parse`: given to the bson package as epoch milliseconds.
  const strict = JSON.stringify(JSON.parse(text, isoDates));
  return plainNumbers(EJSON.parse(strict, { relaxed: false }));
}

/** A `JSON.parse` reviver turning `{"$date": "<string>"}` into `{"$date": {"$numberLong": "<ms>"}}`. */
function isoDates(_key: string, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const date = (value as { $date?: unknown }).$date;
  if (typeof date !== 'string' || Object.keys(value).length !== 1) return value;
  const ms = parseIsoTime(date);
  // Not a time: a string EJSON refuses, so the line is reported as not a valid date.
  return { $date: ms === undefined ? 'not an ISO 8601 time' : { $numberLong: String(ms) } };
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
  // Through `pipeline`, not `pipe`: an error of the input ends the parser with it (with `pipe` it was an
  // unhandled error event, or a parser waiting for ever).
  const parser = pipeline(
    stream,
    parseCsv({
      // A byte order mark before the header (spreadsheets' "CSV UTF-8" starts with one) is not part of
      // its first name.
      bom: true,
      cast: castCell,
      info: true,
      skip_empty_lines: true,
      relax_column_count: true,
      // A quote inside a cell that does not close it where a cell ends (`"5" screen`, `"bad"quote`) is
      // kept as text: refused, it left the parser inside a quoted cell, which swallowed the next rows
      // without a word.
      relax_quotes: true,
      // Any line ending on any line: guessed from the first line, a file whose later lines end otherwise
      // (files joined from two systems) kept a carriage return at the end of every last cell.
      record_delimiter: ['\r\n', '\n', '\r'],
      skip_records_with_error: true,
      on_skip: (error: CsvError | undefined) => {
        if (error !== undefined) {
          const line = typeof error.lines === 'number' ? error.lines : 0;
          skipped.push({ kind: 'bad', line, reason: error.message });
        }
        return undefined;
      },
    }),
    leaveToReader,
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
      const twice = header.find((name, i) => header?.indexOf(name) !== i);
      if (twice !== undefined) {
        // Every row would lose one of the two cells: nothing is read.
        yield { kind: 'bad', line, reason: `column '${twice}' appears twice in the header` };
        return;
      }
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
