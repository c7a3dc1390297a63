import { describe, expect, it } from 'vitest';

import { createBucketPredicates } from '../../../src/reader/bucket-predicates.js';

const spec = {
  timeField: 't',
  metaField: 'm',
  bucketMaxSpanSeconds: 3600,
  idBounds: 'omit',
} as const;
const v = new Date('2024-01-01T05:30:00Z');

describe('time bounds (docs/mongodb-behaviour.md §10.3)', () => {
  it('widens the lower bound on control.min by the span', () => {
    const { bucketFilter } = createBucketPredicates({ t: { $gte: v } }, { ...spec, fixedBuckets: false });
    expect(bucketFilter).toEqual({
      $and: [
        { 'control.max.t': { $_internalExprGte: v } },
        { 'control.min.t': { $_internalExprGte: new Date('2024-01-01T04:30:00Z') } },
      ],
    });
  });

  it('with fixed buckets uses the start of the bucket holding the value, inclusive even for $gt', () => {
    const start = new Date('2024-01-01T05:00:00Z');
    const gte = createBucketPredicates({ t: { $gte: v } }, { ...spec, fixedBuckets: true }).bucketFilter;
    expect(gte).toEqual({
      $and: [
        { 'control.max.t': { $_internalExprGte: v } },
        { 'control.min.t': { $_internalExprGte: start } },
      ],
    });
    const gt = createBucketPredicates({ t: { $gt: v } }, { ...spec, fixedBuckets: true }).bucketFilter;
    expect(gt).toEqual({
      $and: [{ 'control.max.t': { $_internalExprGt: v } }, { 'control.min.t': { $_internalExprGte: start } }],
    });
  });

  it('leaves a non-Date operand on the time field to the event filter', () => {
    const { bucketFilter, eventFilter } = createBucketPredicates(
      { t: { $gte: 5 } },
      { ...spec, fixedBuckets: false },
    );
    expect(bucketFilter).toEqual({});
    expect(eventFilter).toEqual({ t: { $gte: 5 } });
  });
});
