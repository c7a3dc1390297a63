/**
 * A catalog as the catalog-level tests drive it directly: the server's default limits, no memory
 * pressure, and bucketing options with a time field `time` and a metaField `m` (hourly buckets).
 */
import { BucketCatalog } from '../../src/index.js';
import type { BucketCatalogOptions, BucketingOptions } from '../../src/index.js';

/** Bucketing options: `time`, meta `m`, one-hour span rounded to the minute, no reopening index. */
export const kTestBucketing: BucketingOptions = {
  timeField: 'time',
  metaField: 'm',
  bucketMaxSpanSeconds: 3600,
  bucketRoundingSeconds: 60,
  reopeningIndex: 'absent',
};

/**
 * A catalog with the default limits and an expiry threshold no test reaches.
 *
 * @param extra - further parameters (`timeseriesAlwaysUseCompressedBuckets`) and catalog options.
 * @returns the catalog.
 */
export function newTestCatalog(
  extra: {
    readonly parameters?: Partial<BucketCatalogOptions['parameters']>;
  } & Omit<BucketCatalogOptions, 'parameters'> = {},
): BucketCatalog {
  const { parameters, ...options } = extra;
  return new BucketCatalog({
    ...options,
    parameters: {
      timeseriesBucketMaxCount: 1000,
      timeseriesBucketMaxSize: 128000,
      timeseriesBucketMinCount: 10,
      timeseriesIdleBucketExpiryMemoryUsageThresholdBytes: 2 ** 40,
      timeseriesIdleBucketExpiryMaxCountPerAttempt: 3,
      ...parameters,
    },
  });
}
