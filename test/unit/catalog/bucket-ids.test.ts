/**
 * A new bucket's id that is already open in its stripe is drawn again after a re-seed, as the server
 * does; after 16 such draws the measurement fails with `OIDGenerationCollision`.
 */
import { ObjectId } from 'bson';
import { describe, expect, it } from 'vitest';

import type { InsertItem, StageResult } from '../../../src/index.js';
import { BucketIdGenerator } from '../../../src/bucket-format/bucket-oid.js';
import { makeBucketKey, stripeNumber } from '../../../src/catalog/bucket-identifiers.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';

const ns = 'db.system.buckets.t';
const T0 = Date.UTC(2024, 9, 4, 10);

/** Gives `repeats` times the same id, then fresh ones; counts re-seeds. */
class RepeatingIds extends BucketIdGenerator {
  readonly #fixed = new ObjectId();
  #left: number;
  reseeds = 0;

  constructor(repeats: number) {
    super();
    this.#left = repeats;
  }

  override next(roundedStartMs: number): ObjectId {
    if (this.#left <= 0) return super.next(roundedStartMs);
    this.#left--;
    return this.#fixed;
  }

  override reseed(): void {
    this.reseeds++;
  }
}

/** Two series whose buckets share a stripe. */
function twoSeriesOfOneStripe(): [string, string] {
  const stripeOf = (meta: string) => stripeNumber(makeBucketKey(ns, makeBucketMetadata(meta).key));
  const first = 's0';
  for (let i = 1; ; i++) if (stripeOf(`s${i}`) === stripeOf(first)) return [first, `s${i}`];
}

function item(meta: string): InsertItem {
  return {
    measurement: { time: new Date(T0), m: meta, v: 1 },
    timeMs: T0,
    metadata: makeBucketMetadata(meta),
  };
}

async function stage(ids: BucketIdGenerator, metas: ReadonlyArray<string>): Promise<StageResult[]> {
  const catalog = newTestCatalog({ idGenerator: ids });
  const out: StageResult[] = [];
  // One call per series, so that the first bucket is open when the second is made.
  for (const meta of metas) out.push(...(await catalog.insert(ns, kTestBucketing, [item(meta)], 'allow', 0)));
  return out;
}

describe('bucket ids', () => {
  it('draws again, after a re-seed, an id already open in the stripe', async () => {
    // Arrange: the first two draws give the same id.
    const ids = new RepeatingIds(2);
    // Act
    const [a, b] = await stage(ids, twoSeriesOfOneStripe());
    // Assert: both staged, in two buckets, with one re-seed.
    if (a?.kind !== 'staged' || b?.kind !== 'staged') throw new Error('not staged');
    expect(a.batch.bucket.id.hex).not.toBe(b.batch.bucket.id.hex);
    expect(ids.reseeds).toBe(1);
  });

  it('gives up with OIDGenerationCollision after 16 re-seeds', async () => {
    // Arrange: every draw gives the same id.
    const ids = new RepeatingIds(Number.POSITIVE_INFINITY);
    // Act
    const [a, b] = await stage(ids, twoSeriesOfOneStripe());
    // Assert
    expect(a?.kind).toBe('staged');
    expect(b?.kind).toBe('error');
    expect(b?.kind === 'error' && b.error).toMatchObject({ codeName: 'OIDGenerationCollision' });
    expect(ids.reseeds).toBe(16);
  });
});
