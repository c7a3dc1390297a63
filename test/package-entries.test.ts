/**
 * The built package loads one copy of each error class: `tsbuckets/mongodb` shares its modules with
 * `tsbuckets` (tsup's shared chunks) under `require` and `import` alike, so a `MongoStorageError` is an
 * instance of the `TsBucketsError` exported by `tsbuckets`. And the two entries' copies work together: an
 * engine of one with a storage of the other (a program whose dependencies load the package both ways).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

import { build } from 'tsup';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import config from '../tsup.config.js';

interface CoreEntry {
  readonly TsBucketsError: abstract new (...args: never[]) => Error;
}
interface EngineEntry {
  readonly BucketEngine: new (options: { storage: object }) => {
    createCollection(
      name: string,
      options: object,
    ): Promise<{
      insertOne(doc: object): Promise<unknown>;
      find(filter: object): { toArray(): Promise<Array<Record<string, unknown>>> };
    }>;
    close(): Promise<void>;
  };
  readonly MemoryStorage: new () => object;
}
interface MongoEntry {
  readonly MongoStorageError: new (details: {
    operation: string;
    collection: string;
    attempts: number;
    cause: unknown;
  }) => Error;
}

const root = resolve(import.meta.dirname, '..');
let outDir = '';

beforeAll(async () => {
  // Arrange: the package's own build configuration, into a scratch directory (declarations are not needed).
  mkdirSync(join(root, 'tmp'), { recursive: true });
  outDir = mkdtempSync(join(root, 'tmp', 'entries-'));
  // The library's build is the first of the configuration (the second is the command-line tool).
  const library = (Array.isArray(config) ? config[0] : config) as object;
  await build({ ...library, outDir, dts: false, sourcemap: false, clean: true, silent: true });
}, 120_000);

afterAll(() => {
  if (outDir !== '') rmSync(outDir, { recursive: true, force: true });
});

const details = {
  operation: 'insertOne',
  collection: 'system.buckets.x',
  attempts: 1,
  cause: new Error('x'),
};

describe('package entries', () => {
  it('under require, a MongoStorageError is an instance of the TsBucketsError of tsbuckets', () => {
    // Act
    const load = createRequire(join(outDir, 'index.cjs'));
    const core = load(join(outDir, 'index.cjs')) as CoreEntry;
    const mongo = load(join(outDir, 'mongodb', 'index.cjs')) as MongoEntry;
    // Assert
    expect(new mongo.MongoStorageError(details)).toBeInstanceOf(core.TsBucketsError);
  });

  it('under import, a MongoStorageError is an instance of the TsBucketsError of tsbuckets', async () => {
    // Act
    const core = (await import(pathToFileURL(join(outDir, 'index.js')).href)) as CoreEntry;
    const mongo = (await import(pathToFileURL(join(outDir, 'mongodb', 'index.js')).href)) as MongoEntry;
    // Assert
    expect(new mongo.MongoStorageError(details)).toBeInstanceOf(core.TsBucketsError);
  });

  it.each([
    ['import', 'require'],
    ['require', 'import'],
  ])('an engine loaded by %s works over a MemoryStorage loaded by %s', async (engineBy, storageBy) => {
    // Arrange
    const load = createRequire(join(outDir, 'index.cjs'));
    const byRequire = load(join(outDir, 'index.cjs')) as EngineEntry;
    const byImport = (await import(pathToFileURL(join(outDir, 'index.js')).href)) as EngineEntry;
    const { BucketEngine } = engineBy === 'import' ? byImport : byRequire;
    const { MemoryStorage } = storageBy === 'import' ? byImport : byRequire;
    const engine = new BucketEngine({ storage: new MemoryStorage() });
    const coll = await engine.createCollection('w', { timeseries: { timeField: 't', metaField: 'm' } });
    // Act: a bucket's first commit, then later ones (each hands the storage the catalog's objects).
    for (let i = 0; i < 3; i++) await coll.insertOne({ t: new Date(i * 1000), m: 1, v: i });
    // Assert
    const stored = await coll.find({}).toArray();
    expect(stored.map((d) => d.v)).toEqual([0, 1, 2]);
    await engine.close();
  });
});
