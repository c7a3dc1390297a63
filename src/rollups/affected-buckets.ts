/**
 * The buckets a delete or meta update may change: the loose bucket filter of its measurement filter (the
 * same translation the delete uses), so their series and time ranges can be recomputed afterwards.
 *
 * @packageDocumentation
 */
import { createBucketPredicates } from '../reader/bucket-predicates.js';
import type { BucketFilter } from '../storage/storage.js';
import type { QueryFilter } from '../util/bson-query.js';

/**
 * A filter over bucket documents matching every bucket that may hold a measurement matching `filter`.
 *
 * @param filter - a filter over measurements.
 * @param fields - the collection's fields and bucket span.
 * @returns the bucket filter (a superset).
 */
export function affectedBucketsFilter(
  filter: QueryFilter,
  fields: {
    readonly timeField: string;
    readonly metaField: string | undefined;
    readonly bucketMaxSpanSeconds: number;
  },
): BucketFilter {
  return createBucketPredicates(filter, {
    timeField: fields.timeField,
    metaField: fields.metaField,
    bucketMaxSpanSeconds: fields.bucketMaxSpanSeconds,
    fixedBuckets: false,
    idBounds: 'omit',
  }).bucketFilter;
}
