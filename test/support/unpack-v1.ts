import { decompressBucket } from '../../src/bucket-format/bucket-compression.js';
import type { StoredBucket } from '../../src/storage/storage.js';

/**
 * A deliberately naive reference unpacker, independent of src/reader: compressed buckets are first
 * decompressed to version 1; rows are the keys of the time column; each row takes every column's value at
 * that key; meta goes under `metaField`.
 */
export function unpackV1(
  stored: StoredBucket,
  timeField: string,
  metaField?: string,
): Array<Record<string, unknown>> {
  const bucket = (stored.control as { version: number }).version === 1 ? stored : decompressBucket(stored);
  const data = bucket.data as Record<string, Record<string, unknown>>;
  const rows: Array<Record<string, unknown>> = [];
  for (const key of Object.keys(data[timeField] ?? {})) {
    const row: Record<string, unknown> = {};
    for (const field of Object.keys(data)) {
      const column = data[field]!;
      if (Object.prototype.hasOwnProperty.call(column, key))
        Object.defineProperty(row, field, {
          value: column[key],
          enumerable: true,
          writable: true,
          configurable: true,
        });
    }
    if (metaField !== undefined && 'meta' in bucket) row[metaField] = bucket.meta;
    rows.push(row);
  }
  return rows;
}
