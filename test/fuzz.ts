/**
 * The hostile-input properties at fuzzing size: `npm run fuzz` (10 000 cases each), or
 * `npm run fuzz -- 50000` for more. Runs three properties, each with the same seed:
 * - hostile values: measurements BSON may or may not hold (`test/support/hostile-input.ts`);
 * - hostile arguments: filters, find options and pipelines (`test/support/hostile-arguments.ts`);
 * - pipeline stage codes: a pipeline fails with the code of its first malformed stage (same module).
 * Prints the cases run, the time and the seed of each, so a failure can be replayed with
 * `-- <runs> <seed>`; exits non-zero when any property fails, after running all of them.
 */
import fc from 'fast-check';

import { BucketEngine } from '../src/index.js';
import {
  checkHostileArguments,
  checkStageCodes,
  hostileArgument,
  hostileFindOptions,
  hostilePipeline,
  stageCodeCollection,
  stageCodePipeline,
} from './support/hostile-arguments.js';
import { checkHostileCall, hostileCall } from './support/hostile-input.js';

const runs = Number(process.argv[2] ?? 10_000);
const seed =
  process.argv[3] === undefined ? Date.now() ^ (Math.random() * 0x100000000) : Number(process.argv[3]);

/**
 * Run one property at `runs` cases with `seed` and print its outcome; a failure is printed (with its
 * counterexample) and sets a failing exit code, so the next properties still run.
 */
async function fuzz<Ts>(name: string, property: (count: () => void) => fc.IAsyncProperty<Ts>): Promise<void> {
  let cases = 0;
  const started = performance.now();
  let failure: unknown;
  try {
    await fc.assert(
      property(() => {
        cases++;
      }),
      { numRuns: runs, seed },
    );
  } catch (error) {
    failure = error;
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (failure === undefined) {
    console.log(`${name}: ${cases} cases passed in ${seconds} s (seed ${seed})`);
    return;
  }
  process.exitCode = 1;
  console.log(`${name}: FAILED after ${cases} cases (shrinking included) in ${seconds} s (seed ${seed})`);
  console.log(failure instanceof Error ? failure.message : 'a value that is not an Error');
}

await fuzz('hostile values', (count) =>
  fc.asyncProperty(hostileCall, fc.integer({ min: 1, max: 4 }), async (call, bucketMaxCount) => {
    count();
    await checkHostileCall(call, bucketMaxCount);
  }),
);

const argumentsEngine = new BucketEngine();
await fuzz('hostile arguments', (count) =>
  fc.asyncProperty(hostileArgument, hostileFindOptions, hostilePipeline, async (arg, options, stages) => {
    count();
    await checkHostileArguments(argumentsEngine, arg, options, stages);
  }),
);
await argumentsEngine.close();

const stagesEngine = new BucketEngine();
const stagesCollection = await stageCodeCollection(stagesEngine);
await fuzz('pipeline stage codes', (count) =>
  fc.asyncProperty(stageCodePipeline, async (chosen) => {
    count();
    await checkStageCodes(stagesCollection, chosen);
  }),
);
await stagesEngine.close();
