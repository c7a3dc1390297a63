/**
 * Tables printed by the `tsbuckets` command, drawn by `cli-table3` without colours (the output is the
 * same on a terminal and in a file, and tests compare it exactly).
 *
 * @packageDocumentation
 */
import { EJSON } from 'bson';
import Table from 'cli-table3';

/** Column alignment. */
export type Alignment = 'left' | 'right';

/**
 * A table as text.
 *
 * @param head - column titles.
 * @param rows - cells, one array per row, as text.
 * @param align - alignment per column (default: left for the first, right for the others).
 * @returns the table, lines joined by `\n`, without a final newline.
 */
export function renderTable(
  head: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  align?: ReadonlyArray<Alignment>,
): string {
  const table = new Table({
    head: [...head],
    style: { head: [], border: [], compact: true },
    colAligns: head.map((_, i) => align?.[i] ?? (i === 0 ? 'left' : 'right')),
  });
  for (const row of rows) table.push([...row]);
  return table.toString();
}

/**
 * A two-column table of names and values (counters).
 *
 * @param entries - names and values.
 * @param head - the titles of the two columns.
 * @returns the table as text.
 */
export function renderKeyValueTable(
  entries: Iterable<readonly [string, unknown]>,
  head: readonly [string, string] = ['name', 'value'],
): string {
  const rows: string[][] = [];
  for (const [name, value] of entries) rows.push([name, formatCell(value)]);
  return renderTable(head, rows, ['left', 'right']);
}

/**
 * A value as a table cell: numbers with thousands separators, dates in ISO 8601, ObjectIds in hex,
 * strings unquoted, everything else as relaxed Extended JSON.
 *
 * @param value - any value.
 * @returns the text.
 */
export function formatCell(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'string') return value;
  if (isObjectId(value)) return value.toHexString();
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (typeof value === 'number')
    return Number.isInteger(value) ? value.toLocaleString('en-US') : String(value);
  switch (bsonTypeOf(value)) {
    case 'Int32':
    case 'Double':
      return formatCell((value as { valueOf(): number }).valueOf());
    case 'Long':
      // Every digit: an int64 beyond 2^53 is not a JS number.
      return BigInt((value as { toString(): string }).toString()).toLocaleString('en-US');
    default:
      return formatValue(value);
  }
}

/** The `_bsontype` of a js-bson value (of either copy of the package), or `undefined`. */
function bsonTypeOf(value: unknown): unknown {
  return typeof value === 'object' && value !== null
    ? (value as { _bsontype?: unknown })._bsontype
    : undefined;
}

function isObjectId(value: unknown): value is { toHexString(): string } {
  return (
    typeof value === 'object' && value !== null && (value as { _bsontype?: unknown })._bsontype === 'ObjectId'
  );
}

/**
 * A value as compact relaxed Extended JSON (`{"$date": ...}` for dates, `{"$oid": ...}` for ObjectIds).
 *
 * @param value - any BSON value.
 * @returns the text.
 */
export function formatValue(value: unknown): string {
  return EJSON.stringify(exactLongs(value), { relaxed: true });
}

/**
 * `value` with every int64 beyond what a JS number holds as `{"$numberLong": "..."}` (relaxed Extended
 * JSON writes an int64 as a number, which rounds it); shared where nothing changes.
 */
function exactLongs(value: unknown): unknown {
  if (Array.isArray(value)) {
    const out = value.map(exactLongs);
    return out.every((v, i) => v === value[i]) ? value : out;
  }
  if (typeof value !== 'object' || value === null) return value;
  const type = bsonTypeOf(value);
  if (type === 'Long') {
    const text = (value as { toString(): string }).toString();
    return Number.isSafeInteger(Number(text)) ? value : { $numberLong: text };
  }
  if (type !== undefined || value instanceof Date) return value;
  const entries = Object.entries(value);
  const mapped = entries.map(([k, v]) => [k, exactLongs(v)] as const);
  return mapped.every(([, v], i) => v === entries[i]?.[1]) ? value : Object.fromEntries(mapped);
}
