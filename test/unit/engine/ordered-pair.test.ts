/**
 * Two ordered calls of one engine at once, sharing buckets, after a commit that misses its guard: found
 * by the engine suite's property (several engines on one storage).
 */
import { describe, expect, it } from 'vitest';

import { BucketEngine, MemoryStorage } from '../../../src/index.js';
import type { BucketWrite, BucketWriteOutcome, CommitWritesOptions } from '../../../src/index.js';

const t0 = Date.parse('2024-10-04T10:00:00Z');

/** A MemoryStorage whose `commitWrites` answers after a few more ticks, as a storage over a network. */
class LaterStorage extends MemoryStorage {
  override async commitWrites(
    ns: string,
    writes: ReadonlyArray<BucketWrite>,
    options: CommitWritesOptions,
  ): Promise<BucketWriteOutcome[]> {
    const outcomes = await super.commitWrites(ns, writes, options);
    await Promise.resolve();
    return outcomes;
  }
}

describe('ordered calls of one engine', () => {
  it('two at once, whose first commit misses a guard, both succeed', async () => {
    // Engine 3's two ordered calls share buckets of series s0 and s1; their first commit misses a guard
    // (engine 2 appended first). Each call then withdrew all its batches, clearing their buckets and so
    // the other call's batches, in step on every retry, until both failed with TimeseriesBucketCleared.
    // Ordered calls of one collection now commit one at a time.
    const storage = new LaterStorage();
    const engines = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const engine = new BucketEngine({
          storage,
          parameters: {
            timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
            timeseriesBucketMaxCount: 2,
            timeseriesAlwaysUseCompressedBuckets: false,
          },
        });
        const coll = await engine.createCollection('x', {
          timeseries: { timeField: 'ts', metaField: 'sensor' },
        });
        return { engine, coll };
      }),
    );
    const [e0, e1, e2, e3] = engines.map((e) => e.coll);
    const m = (series: number, offset: number, mid: string) => ({
      ts: new Date(t0 + offset * 1000),
      sensor: `s${series}`,
      mid,
    });
    await Promise.all([e0!.insertMany([m(0, 695, 'a')], { ordered: false }), e1!.insertMany([m(0, 0, 'b')])]);
    const outcomes = await Promise.allSettled([
      e1!.insertMany([m(1, 0, 'c')], { ordered: false }),
      e2!.insertMany([m(1, 0, 'd')], { ordered: false }),
      e3!.insertMany([m(1, 1240, 'e0'), m(0, 0, 'e1'), m(0, 0, 'e2')], { ordered: true }),
      e3!.insertMany([m(0, 0, 'f0'), m(0, 0, 'f1'), m(1, 1096, 'f2')], { ordered: true }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(await e0!.countDocuments()).toBe(10);
    for (const { engine } of engines) await engine.close();
  });
});
