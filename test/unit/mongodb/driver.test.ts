import { afterEach, describe, expect, it, vi } from 'vitest';

import { TsBucketsError } from '../../../src/errors.js';
import { kMongoDriverMissingMessage, loadMongoDriver } from '../../../src/mongodb/driver.js';

/** What Node's `require` throws for a package that is not installed. */
function notFound(name: string): Error {
  return Object.assign(new Error(`Cannot find module '${name}'\nRequire stack:\n- /app/index.js`), {
    code: 'MODULE_NOT_FOUND',
  });
}

function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('loadMongoDriver', () => {
  it('loads the installed driver through require', async () => {
    const mongodb = await import('mongodb');
    const driver = loadMongoDriver();
    expect(driver.MongoError).toBe(mongodb.MongoError);
    expect(driver.MongoNetworkTimeoutError).toBe(mongodb.MongoNetworkTimeoutError);
  });

  it('says what to install when the driver is missing (require and import errors)', () => {
    const esmNotFound = Object.assign(new Error("Cannot find package 'mongodb' imported from /app/x.js"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    for (const cause of [notFound('mongodb'), esmNotFound]) {
      const error = thrownBy(() =>
        loadMongoDriver(() => {
          throw cause;
        }),
      );
      expect(TsBucketsError.isTsBucketsError(error)).toBe(true);
      expect((error as Error).message).toBe(kMongoDriverMissingMessage);
      expect((error as Error).cause).toBe(cause);
    }
    expect(kMongoDriverMissingMessage).toContain('npm install mongodb');
  });

  it('names other load failures instead of claiming the driver is missing', () => {
    const inner = notFound('bson');
    const error = thrownBy(() =>
      loadMongoDriver(() => {
        throw inner;
      }),
    ) as Error;
    expect(error.message).toBe(
      "tsbuckets/mongodb could not load the 'mongodb' package: Cannot find module 'bson'\nRequire stack:\n- /app/index.js",
    );
    expect(error.cause).toBe(inner);
    expect((thrownBy(() => loadMongoDriver(() => ({}))) as Error).message).toBe(
      "tsbuckets/mongodb could not load the 'mongodb' package: it has no MongoError class (not the official driver?)",
    );
  });
});

describe('importing tsbuckets/mongodb without the driver', () => {
  afterEach(() => {
    vi.doUnmock('node:module');
    vi.resetModules();
  });

  it('fails with the clear error, not a bare module-not-found', async () => {
    // Arrange: every require made by a fresh copy of the module graph fails as if `mongodb` were absent.
    vi.resetModules();
    vi.doMock('node:module', () => ({
      createRequire: () => (id: string) => {
        throw notFound(id);
      },
    }));
    // Act / Assert
    await expect(import('../../../src/mongodb/index.js')).rejects.toThrow(kMongoDriverMissingMessage);
    // The core entry point does not need the driver at all.
    await expect(import('../../../src/index.js')).resolves.toHaveProperty('BucketEngine');
  });
});
