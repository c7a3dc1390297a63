/**
 * Hostile input (issue #15 §3): every generated measurement is either refused with a typed error exactly
 * when BSON cannot hold it, or stored and read back as the same BSON, in both ordered modes, with nothing
 * else lost. The law and the generators live in `test/support/hostile-input.ts`; `npm run fuzz` runs the
 * same property at 10 000 cases.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';

import { checkHostileCall, hostileCall } from '../support/hostile-input.js';

describe('hostile input', () => {
  it('is refused with a typed error exactly when BSON cannot hold it, else read back unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(hostileCall, fc.integer({ min: 1, max: 4 }), async (call, bucketMaxCount) => {
        await checkHostileCall(call, bucketMaxCount);
      }),
      { numRuns: 300 },
    );
  }, 120_000);
});
