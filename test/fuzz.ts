/**
 * The hostile-input property at fuzzing size: `npm run fuzz` (10 000 cases), or `npm run fuzz -- 50000`.
 * Prints the number of cases run and the seed, so a failure can be replayed with `-- <runs> <seed>`.
 */
import fc from 'fast-check';

import { checkHostileCall, hostileCall } from './support/hostile-input.js';

const runs = Number(process.argv[2] ?? 10_000);
const seed =
  process.argv[3] === undefined ? Date.now() ^ (Math.random() * 0x100000000) : Number(process.argv[3]);
let cases = 0;
const started = performance.now();
await fc.assert(
  fc.asyncProperty(hostileCall, fc.integer({ min: 1, max: 4 }), async (call, bucketMaxCount) => {
    cases++;
    await checkHostileCall(call, bucketMaxCount);
  }),
  { numRuns: runs, seed },
);
const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(`hostile input: ${cases} cases passed in ${seconds} s (seed ${seed})`);
