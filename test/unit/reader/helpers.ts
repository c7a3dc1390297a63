import { BucketEngine } from '../../../src/engine/bucket-engine.js';
import type { TimeseriesCollection } from '../../../src/engine/timeseries-collection.js';
import type { ReaderContext } from '../../../src/reader/reader.js';

/** A real engine and collection, and a reader context built from it. */
export async function setupCollection(
  timeseries: Record<string, unknown> = {},
  parameters: Record<string, number | boolean> = {},
) {
  const engine = new BucketEngine({
    // The 5.x–7.x format unless a test asks for the 8.0 one: open version-1 buckets keep the inserted
    // value objects (an Int32 reads back as an Int32), which several tests pin.
    parameters: {
      timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
      timeseriesAlwaysUseCompressedBuckets: false,
      ...parameters,
    },
  });
  const coll = await engine.createCollection('weather', {
    timeseries: { timeField: 'ts', metaField: 'sensor', ...timeseries },
  });
  const ctx = (): ReaderContext => ({
    storage: engine.storage,
    bucketsNs: coll.bucketsNamespace,
    options: coll.options,
  });
  return { engine, coll, ctx };
}

export type Setup = { engine: BucketEngine; coll: TimeseriesCollection; ctx: () => ReaderContext };

export const iso = (s: string): Date => new Date(s);
