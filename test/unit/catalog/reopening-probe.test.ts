/**
 * A series the storage has never seen needs no reopening query: a source that can tell so without I/O
 * (`ReopeningSource.holdsNoBucketsOf`) spares the query, and the catalog counts what the query would
 * have counted. A source that cannot tell, or says it may hold buckets, is queried as before.
 */
import { describe, expect, it } from 'vitest';

import type { ReopeningSource, StoredBucket } from '../../../src/index.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';

const ns = 'db.system.buckets.t';
const options = { ...kTestBucketing, reopeningIndex: 'present' } as const;
const T0 = Date.UTC(2024, 9, 4, 10);

/** A source with no buckets, recording the queries it is asked and the probes it answers. */
function emptySource(probe: boolean | undefined): {
  source: ReopeningSource;
  queries: unknown[];
  probes: unknown[];
} {
  const queries: unknown[] = [];
  const probes: unknown[] = [];
  const source: ReopeningSource = {
    fetchBucket: () => Promise.resolve(undefined),
    queryBuckets(filter): AsyncIterable<StoredBucket> {
      queries.push(filter);
      return (async function* () {})();
    },
    replaceBucket: () => Promise.resolve(false),
  };
  if (probe === undefined) return { source, queries, probes };
  return {
    source: {
      ...source,
      holdsNoBucketsOf: (hasMeta, meta) => {
        probes.push(hasMeta ? meta : '(no meta)');
        return probe;
      },
    },
    queries,
    probes,
  };
}

async function insertTwoSeries(probe: boolean | undefined) {
  const catalog = newTestCatalog();
  const { source, queries, probes } = emptySource(probe);
  const items = ['a', 'b'].map((m) => ({
    measurement: { time: new Date(T0), m, v: 1 },
    timeMs: T0,
    metadata: makeBucketMetadata(m),
  }));
  const results = await catalog.insert(ns, options, items, 'allow', catalog.newOpId(), source);
  const stats = catalog.executionStats(ns);
  return {
    staged: results.map((r) => r.kind),
    queries: queries.length,
    // In stripe order: sorted for comparison.
    probes: probes.map(String).sort(),
    counted: {
      numBucketQueriesFailed: stats?.numBucketQueriesFailed,
      numBucketsQueried: stats?.numBucketsQueried,
      numActiveBuckets: stats?.numActiveBuckets,
    },
  };
}

describe('reopening query of a series the storage has never seen', () => {
  it('is skipped when the source knows it holds none, and counted as the failed query it stands for', async () => {
    // Arrange, Act
    const skipped = await insertTwoSeries(true);
    const queried = await insertTwoSeries(undefined);
    // Assert
    expect(skipped.queries).toBe(0);
    expect(skipped.probes).toEqual(['a', 'b']);
    expect(queried.queries).toBe(2);
    expect(skipped.staged).toEqual(['staged', 'staged']);
    expect(skipped.counted).toEqual(queried.counted);
    expect(skipped.counted).toEqual({
      numBucketQueriesFailed: 2,
      numBucketsQueried: 0,
      numActiveBuckets: 2,
    });
  });

  it('runs when the source may hold buckets of the series', async () => {
    const maybe = await insertTwoSeries(false);
    expect(maybe.queries).toBe(2);
    expect(maybe.probes).toEqual(['a', 'b']);
  });
});
