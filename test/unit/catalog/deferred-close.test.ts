/**
 * A compressed bucket closed by the catalog while its storage still holds deferred columns: what was
 * committed stays readable, whether the close finds the bucket idle (its map is sealed) or with a batch's
 * write in flight (a collection cleared under it: the map is left for the storage to take from).
 */
import { describe, expect, it } from 'vitest';

import { MemoryStorage } from '../../../src/index.js';
import type { InsertItem, StoredBucket, WriteBatch, BucketCatalog } from '../../../src/index.js';
import { BSONColumn } from '../../../src/bucket-format/bson-column/bson-column.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { kTestBucketing, newTestCatalog } from '../../support/catalog.js';

const ns = 'db.system.buckets.t';
const options = kTestBucketing;
const T0 = Date.UTC(2024, 9, 4, 10);

function newCatalog(): BucketCatalog {
  return newTestCatalog({
    parameters: { timeseriesAlwaysUseCompressedBuckets: true },
    deferredColumns: true,
  });
}

function item(timeMs: number, v: number): InsertItem {
  return { measurement: { time: new Date(timeMs), m: 'a', v }, timeMs, metadata: makeBucketMetadata('a') };
}

async function prepare(catalog: BucketCatalog, timeMs: number, v: number) {
  const [result] = await catalog.insert(ns, options, [item(timeMs, v)], 'disallow', catalog.newOpId());
  if (result?.kind !== 'staged') throw new Error('not staged');
  const batch: WriteBatch = result.batch;
  catalog.claimWriteBatchCommitRights(batch);
  return { batch, prepared: await catalog.prepareCommit(batch) };
}

async function write(storage: MemoryStorage, prepared: Awaited<ReturnType<typeof prepare>>['prepared']) {
  if (prepared.kind === 'insert') await storage.insertOne(ns, prepared.document as StoredBucket);
  else if (prepared.kind === 'update')
    expect(await storage.applyCommit(ns, prepared.commit)).toEqual({ kind: 'updated' });
  else throw new Error(`aborted: ${String(prepared.error)}`);
}

async function stored(storage: MemoryStorage): Promise<{ count: unknown; v: unknown[] }> {
  const docs: StoredBucket[] = [];
  for await (const doc of storage.find(ns, {})) docs.push(doc);
  expect(docs).toHaveLength(1);
  const doc = docs[0] as {
    control: { count: unknown };
    data: { v: { buffer: Uint8Array; position: number } };
  };
  const column = doc.data.v;
  return { count: doc.control.count, v: BSONColumn.decode(column.buffer.subarray(0, column.position)) };
}

/** A catalog and a storage holding one bucket of `n` measurements (values 0, 1, ...), each committed alone. */
async function committed(n: number): Promise<{ catalog: BucketCatalog; storage: MemoryStorage }> {
  const catalog = newCatalog();
  const storage = new MemoryStorage();
  for (let i = 0; i < n; i++) {
    const { batch, prepared } = await prepare(catalog, T0 + i * 1000, i);
    await write(storage, prepared);
    await catalog.finish(batch);
  }
  return { catalog, storage };
}

describe('deferred columns when the catalog closes a bucket', () => {
  it('an idle bucket cleared: its committed measurements are taken from the sealed map', async () => {
    // Arrange
    const { catalog, storage } = await committed(3);
    // Act
    await catalog.clear(ns);
    // Assert
    expect(await stored(storage)).toEqual({ count: 3, v: [0, 1, 2] });
  });

  it('a bucket cleared with a batch in flight: the batch written afterwards is read back whole', async () => {
    // Arrange: two committed measurements, a third prepared.
    const { catalog, storage } = await committed(2);
    const third = await prepare(catalog, T0 + 2000, 2);
    // Act: the catalog forgets the bucket, then the third write lands.
    await catalog.clear(ns);
    await write(storage, third.prepared);
    // Assert
    expect(await stored(storage)).toEqual({ count: 3, v: [0, 1, 2] });
  });
});
