/**
 * The event filter applied to the rows of one bucket, filter columns first (the server evaluates the
 * residual predicate on the unpacked measurement; as its `BucketUnpacker` with `eventFilter` pushdown, rows
 * are rejected here before the rest of the row is built).
 *
 * A query's filter is planned once ({@link planRowFilter}): when the filter names the top-level fields it
 * reads, each row is first tested on a small document holding only those fields, taken from their columns;
 * the other columns are decoded only if some row matches, and only matching rows are built. When the filter
 * may read any field (`$where`, `$$ROOT`...), or reads every field the query unpacks anyway, whole rows are
 * built and tested.
 *
 * @packageDocumentation
 */
import { BsonQuery } from '../util/bson-query.js';
import type { QueryFilter } from '../util/bson-query.js';
import { defineField } from '../util/safe-record.js';
import { columnValues, fillRows, timeValues } from './bucket-unpacker.js';
import type { MeasurementDocument, OpenedBucket } from './bucket-unpacker.js';
import { filterDependencies } from './field-dependencies.js';

/** How rows are filtered, resolved once per query. */
export type RowFilter =
  /** No event filter: every row matches. */
  | { readonly kind: 'none' }
  /** Test a document of the filter's fields before building the row. */
  | { readonly kind: 'probe'; readonly query: BsonQuery; readonly fields: ReadonlySet<string> }
  /** The filter may read any field: build each row, then test it. */
  | { readonly kind: 'row'; readonly query: BsonQuery };

const kNoFilter: RowFilter = Object.freeze({ kind: 'none' });

/**
 * Plan the filtering of rows.
 *
 * @param eventFilter - the per-measurement filter, `undefined` when the bucket filter is exact.
 * @returns the plan (the filter compiled once).
 */
export function planRowFilter(eventFilter: QueryFilter | undefined): RowFilter {
  if (eventFilter === undefined) return kNoFilter;
  const query = new BsonQuery(eventFilter);
  const deps = filterDependencies(eventFilter);
  return deps === 'all' ? { kind: 'row', query } : { kind: 'probe', query, fields: deps };
}

/** Whether building whole rows costs no more than probing: the probe would hold every emitted field. */
function probeIsWholeRow(opened: OpenedBucket, fields: ReadonlySet<string>): boolean {
  if (opened.emitTime && !fields.has(opened.timeField)) return false;
  if (opened.emitMeta && !fields.has(opened.metaField)) return false;
  for (const name of opened.names) if (!fields.has(name)) return false;
  return true;
}

/**
 * The rows of a bucket that match a probing filter, ascending. Probe documents hold the filter's fields
 * (the stored meta itself: a filter does not change what it reads).
 */
function probeRows(opened: OpenedBucket, filter: RowFilter & { kind: 'probe' }): number[] {
  const probes: MeasurementDocument[] = [];
  const n = opened.count;
  if (n === 0) return [];
  for (let r = 0; r < n; r++) probes.push({});
  const { fields } = filter;
  if (fields.has(opened.timeField)) setColumn(probes, opened.timeField, timeValues(opened));
  if (opened.hasMeta && fields.has(opened.metaField)) {
    for (let r = 0; r < n; r++) defineField(probes[r] as MeasurementDocument, opened.metaField, opened.meta);
  }
  for (let c = 0; c < opened.names.length; c++) {
    const name = opened.names[c] as string;
    if (fields.has(name)) setColumn(probes, name, columnValues(opened, c));
  }
  const matching: number[] = [];
  for (let r = 0; r < n; r++) if (filter.query.test(probes[r] as MeasurementDocument)) matching.push(r);
  return matching;
}

function setColumn(probes: MeasurementDocument[], name: string, values: ReadonlyArray<unknown>): void {
  for (let r = 0; r < probes.length; r++) {
    const value = values[r];
    if (value !== undefined) defineField(probes[r] as MeasurementDocument, name, value);
  }
}

/** Keep in `out[base...]` the documents that match, in order. */
function keepMatching(out: MeasurementDocument[], base: number, query: BsonQuery): void {
  let kept = base;
  for (let k = base; k < out.length; k++) {
    const doc = out[k] as MeasurementDocument;
    if (query.test(doc)) out[kept++] = doc;
  }
  out.length = kept;
}

/**
 * Append the matching measurements of an opened bucket to `out`, in bucket order.
 *
 * @param opened - from `openBucket` (its selection includes every field the filter reads).
 * @param filter - from {@link planRowFilter}.
 * @param out - receives one fresh document per matching row.
 * @throws {@link TimeseriesError} `BadValue` when a column does not decode.
 */
export function unpackMatching(opened: OpenedBucket, filter: RowFilter, out: MeasurementDocument[]): void {
  switch (filter.kind) {
    case 'none':
      fillRows(opened, undefined, out);
      return;
    case 'row': {
      const base = out.length;
      fillRows(opened, undefined, out);
      keepMatching(out, base, filter.query);
      return;
    }
    case 'probe': {
      if (probeIsWholeRow(opened, filter.fields)) {
        const base = out.length;
        fillRows(opened, undefined, out);
        keepMatching(out, base, filter.query);
        return;
      }
      const rows = probeRows(opened, filter);
      if (rows.length > 0) fillRows(opened, rows.length === opened.count ? undefined : rows, out);
      return;
    }
    default: {
      const never: never = filter;
      return never;
    }
  }
}

/**
 * The number of matching measurements of an opened bucket; with a probing filter, no row is built.
 *
 * @param opened - from `openBucket`.
 * @param filter - from {@link planRowFilter}.
 * @returns the count.
 * @throws {@link TimeseriesError} `BadValue` when a column does not decode.
 */
export function countMatching(opened: OpenedBucket, filter: RowFilter): number {
  switch (filter.kind) {
    case 'none':
      return opened.count;
    case 'row': {
      const rows: MeasurementDocument[] = [];
      unpackMatching(opened, filter, rows);
      return rows.length;
    }
    case 'probe':
      return probeRows(opened, filter).length;
    default: {
      const never: never = filter;
      return never;
    }
  }
}
