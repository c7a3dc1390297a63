import { describe, expect, it } from 'vitest';

import { Deferred } from '../../../src/util/deferred.js';

describe('Deferred', () => {
  it('settles once; a promise taken before settling follows it', async () => {
    const d = new Deferred<number>();
    const early = d.promise;
    expect(d.state).toBe('pending');
    d.resolve(1);
    d.resolve(2);
    d.reject(new Error('late'));
    expect(d.state).toBe('fulfilled');
    expect(d.value).toBe(1);
    await expect(early).resolves.toBe(1);
    await expect(d.promise).resolves.toBe(1);
  });

  it('a promise taken after settling is settled the same way', async () => {
    const d = new Deferred<number>();
    const error = new Error('failed');
    d.reject(error);
    expect(d.error).toBe(error);
    await expect(d.promise).rejects.toBe(error);
  });

  it('an unobserved rejection does not surface as unhandled', async () => {
    const d = new Deferred<number>();
    void d.promise;
    d.reject(new Error('nobody listens'));
    // If the rejection were unhandled, vitest would report it and fail the run.
    await new Promise((resolve) => setImmediate(resolve));
    expect(d.state).toBe('rejected');
  });
});
