/**
 * Pins the public surface: every runtime export of `tsbuckets` and `tsbuckets/mongodb`. Adding an export
 * is a deliberate change to this list; removing or renaming one breaks users.
 */
import { describe, expect, it } from 'vitest';

import * as core from '../src/index.js';
import * as mongodb from '../src/mongodb/index.js';

describe('public exports', () => {
  it('tsbuckets', () => {
    expect(Object.keys(core).sort()).toEqual([
      'BSONColumn',
      'BSONColumnBuilder',
      'BucketCatalog',
      'BucketEngine',
      'BulkWriteError',
      'Cursor',
      'ErrorCodes',
      'InternalInvariantError',
      'MemoryStorage',
      'ReaderCursor',
      'TimeseriesCollection',
      'TimeseriesError',
      'TsBucketsError',
      'applyBinaryDiff',
      'bucketUpdateDocument',
      'commitGuardFilter',
      'copyMeasurement',
      'counterUpdateDocument',
      'makeBucketMetadata',
    ]);
  });

  it('tsbuckets/mongodb', () => {
    expect(Object.keys(mongodb).sort()).toEqual([
      'MongoStorage',
      'MongoStorageError',
      'backoffDelayMs',
      'isDuplicateKeyError',
      'isTransientMongoError',
      'kDefaultInitialDelayMs',
      'kDefaultMaxDelayMs',
      'kDefaultMaxRetries',
      'kOpenBucketForms',
      'resolveMongoStorageOptions',
    ]);
  });

  it('the core entry never loads the mongodb driver', async () => {
    const { readFile, readdir } = await import('node:fs/promises');
    const files = await readdir(new URL('../src', import.meta.url), { recursive: true, encoding: 'utf8' });
    const offenders: string[] = [];
    for (const file of files) {
      if (!file.endsWith('.ts') || file.startsWith('mongodb/')) continue;
      const text = await readFile(new URL(`../src/${file}`, import.meta.url), 'utf8');
      if (/from 'mongodb'|import\('mongodb'\)|require\('mongodb'\)/.test(text)) offenders.push(file);
    }
    expect(offenders).toEqual([]);
  });

  it('errors are recognised by brand across copies', () => {
    const e = new core.TimeseriesError('BadValue', 'x', { field: 'ts' });
    expect(core.TimeseriesError.isTimeseriesError(e)).toBe(true);
    expect(core.TsBucketsError.isTsBucketsError(e)).toBe(true);
    // A structurally identical error from another copy of the package carries the same brand.
    const foreign = Object.assign(new Error('x'), {
      isTsBucketsErrorBrand: true,
      code: 2,
      codeName: 'BadValue',
    });
    expect(core.TimeseriesError.isTimeseriesError(foreign)).toBe(true);
    expect(core.TimeseriesError.isTimeseriesError(new Error('x'))).toBe(false);
    expect(e.name).toBe('TimeseriesError');
    expect(e.code).toBe(2);
  });
});
