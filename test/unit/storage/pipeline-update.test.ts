import fc from 'fast-check';
import { updateOne } from 'mingo';
import type { PipelineStage } from 'mingo/updater';
import { describe, expect, it } from 'vitest';

import { makeSlotAcc } from '../../../src/rollups/accumulator.js';
import { rollingUpdate } from '../../../src/rollups/rolling-writer.js';
import { resolveRollupSpec } from '../../../src/rollups/spec.js';
import type { ResolvedRollingSpec } from '../../../src/rollups/spec.js';
import { applyPipelineUpdate } from '../../../src/storage/pipeline-update.js';

const kHour = 3_600_000;
const spec = resolveRollupSpec(
  'r',
  { layout: 'rolling', window: '4h', step: '1h', target: 't', key: 'm', sum: ['v'] },
  { timeField: 'ts', metaField: 'm' },
) as ResolvedRollingSpec;

const entryArb = fc.record({
  timestamp: fc.integer({ min: 0, max: 10 }).map((h) => new Date(h * kHour)),
  count: fc.integer({ min: 0, max: 5 }),
  v: fc.integer({ min: -5, max: 5 }),
});

describe('applyPipelineUpdate', () => {
  it('gives what mingo gives for rolling-rollup pipelines on any entity document', () => {
    fc.assert(
      fc.property(
        fc.option(fc.array(entryArb, { maxLength: 6 }), { nil: undefined }),
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: -9, max: 9 }),
        (totals, hour, count, sum) => {
          // Arrange: an entity document, with or without totals, and one step's update.
          const doc: Record<string, unknown> = { _id: 'e', title: 'x' };
          if (totals !== undefined) doc.totals = totals;
          const acc = makeSlotAcc(hour * kHour, 1);
          acc.count = count;
          acc.fields[0]!.count = count;
          acc.fields[0]!.sum = sum;
          const pipeline = rollingUpdate(spec, acc);
          // Act
          const fast = applyPipelineUpdate(structuredClone(doc), pipeline);
          const docs = [structuredClone(doc)];
          updateOne(docs, {}, pipeline as PipelineStage[]);
          // Assert
          expect(fast).toEqual(docs[0]);
        },
      ),
    );
  });

  it('refuses what it does not evaluate, so that the caller uses mingo', () => {
    expect(applyPipelineUpdate({ _id: 1 }, [{ $set: { a: { $toUpper: 'x' } } }])).toBeUndefined();
    expect(applyPipelineUpdate({ _id: 1 }, [{ $replaceWith: {} }])).toBeUndefined();
    expect(applyPipelineUpdate({ _id: 1 }, [{ $set: { 'a.b': 1 } }])).toBeUndefined();
  });
});
