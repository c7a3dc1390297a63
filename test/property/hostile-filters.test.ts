/**
 * Hostile arguments (issue #15 §4): filters, options and pipelines built from MongoDB's operators, unknown
 * ones, malformed arguments and values BSON cannot hold. Law: every read and delete either succeeds or
 * fails with a TimeseriesError (never a TypeError, a RangeError or mingo's untyped Error), and a failed
 * call changes nothing; a pipeline is refused with the code of its first malformed stage. The laws and
 * the generators live in `test/support/hostile-arguments.ts`; `npm run fuzz` runs the same properties at
 * 10 000 cases.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';

import { BucketEngine } from '../../src/index.js';
import {
  checkHostileArguments,
  checkStageCodes,
  hostileArgument,
  hostileFindOptions,
  hostilePipeline,
  stageCodeCollection,
  stageCodePipeline,
} from '../support/hostile-arguments.js';

describe('hostile arguments', () => {
  it('every read, aggregate and delete succeeds or fails with a TimeseriesError, and a failure changes nothing', async () => {
    const engine = new BucketEngine();
    await fc.assert(
      fc.asyncProperty(hostileArgument, hostileFindOptions, hostilePipeline, async (arg, options, stages) => {
        await checkHostileArguments(engine, arg, options, stages);
      }),
      { numRuns: 200 },
    );
    await engine.close();
  }, 120_000);

  it('a pipeline is refused with the code of its first malformed stage, as the server parses stages in order', async () => {
    const engine = new BucketEngine();
    const coll = await stageCodeCollection(engine);
    await fc.assert(
      fc.asyncProperty(stageCodePipeline, async (chosen) => {
        await checkStageCodes(coll, chosen);
      }),
      { numRuns: 100 },
    );
    await engine.close();
  });
});
