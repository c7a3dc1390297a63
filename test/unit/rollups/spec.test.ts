import { describe, expect, it } from 'vitest';

import { TimeseriesError } from '../../../src/errors.js';
import { resolveRollupSpec } from '../../../src/rollups/spec.js';

const fields = { timeField: 'ts', metaField: 'sensor' };

function refusal(
  name: string,
  spec: unknown,
  f: { timeField: string; metaField: string | undefined; collectionName?: string } = fields,
) {
  try {
    resolveRollupSpec(name, spec, f);
  } catch (error) {
    if (!TimeseriesError.isTimeseriesError(error)) throw error;
    return { code: error.codeName, field: error.field };
  }
  throw new Error('accepted');
}

describe('resolveRollupSpec', () => {
  it('refuses bad names and options with InvalidOptions naming the option', () => {
    expect(refusal('a.b', { every: 'hour' })).toEqual({ code: 'InvalidOptions', field: 'name' });
    expect(refusal('h', { every: 'week' })).toEqual({ code: 'InvalidOptions', field: 'every' });
    expect(refusal('h', { every: 'hour', extra: 1 })).toEqual({ code: 'InvalidOptions', field: 'extra' });
    expect(refusal('h', { every: 'hour', groupBy: 'other.id' })).toEqual({
      code: 'InvalidOptions',
      field: 'groupBy',
    });
    expect(refusal('h', { every: 'hour', groupBy: 'sensor.$x' })).toEqual({
      code: 'InvalidOptions',
      field: 'groupBy',
    });
    expect(refusal('h', { every: 'hour', fields: JSON.parse('{"__proto__": ["sum"]}') as unknown })).toEqual({
      code: 'InvalidOptions',
      field: 'fields',
    });
    expect(refusal('h', { every: 'hour', fields: { 'a.b': ['sum'] } })).toEqual({
      code: 'InvalidOptions',
      field: 'fields',
    });
    expect(refusal('h', { every: 'hour', fields: { ts: ['sum'] } })).toEqual({
      code: 'InvalidOptions',
      field: 'fields',
    });
    expect(refusal('h', { every: 'hour', fields: { t: ['median'] } })).toEqual({
      code: 'InvalidOptions',
      field: 'fields.t',
    });
    expect(refusal('c', { layout: 'calendar', period: 'month', levels: ['hour'] })).toEqual({
      code: 'InvalidOptions',
      field: 'levels',
    });
    expect(
      refusal('c', { layout: 'calendar', period: 'day', levels: ['hour'], fields: { t: ['max'] } }),
    ).toEqual({
      code: 'InvalidOptions',
      field: 'fields.t',
    });
    expect(
      refusal('r', { layout: 'rolling', window: '25m', step: '10m', target: 's', key: 'sensor' }),
    ).toEqual({
      code: 'InvalidOptions',
      field: 'window',
    });
    expect(
      refusal('r', {
        layout: 'rolling',
        window: '1d',
        step: '1h',
        target: 's',
        key: 'sensor',
        sum: ['timestamp'],
      }),
    ).toEqual({
      code: 'InvalidOptions',
      field: 'sum',
    });
    expect(
      refusal('h', { every: 'hour', groupBy: 'sensor' }, { timeField: 'ts', metaField: undefined }),
    ).toEqual({
      code: 'InvalidOptions',
      field: 'groupBy',
    });
  });

  it("refuses fields the rollup's documents have, targets tsbuckets keeps, and names 'key' for the key", () => {
    const rolling = { layout: 'rolling', window: '1d', step: '1h', key: 'sensor' };
    const own = { ...fields, collectionName: 'w' };
    for (const name of ['_id', 'group', 'start']) {
      expect(refusal('h', { every: 'hour', fields: { [name]: ['sum'] } })).toEqual({
        code: 'InvalidOptions',
        field: 'fields',
      });
    }
    for (const name of ['start', 'days', 'hours', 'minutes']) {
      expect(
        refusal('c', { layout: 'calendar', period: 'month', levels: ['day'], fields: { [name]: ['sum'] } }),
      ).toEqual({ code: 'InvalidOptions', field: 'fields' });
    }
    for (const name of ['_id', 'totals', 'count']) {
      expect(refusal('r', { ...rolling, target: 's', sum: [name] })).toEqual({
        code: 'InvalidOptions',
        field: 'sum',
      });
    }
    for (const target of ['system.buckets.w', 'tsbuckets.rollups', 'w', 'w.buckets', 'w.rollup.h']) {
      expect(refusal('r', { ...rolling, target }, own)).toEqual({ code: 'InvalidOptions', field: 'target' });
    }
    expect(resolveRollupSpec('r', { ...rolling, target: 'w.latest' }, own)).toMatchObject({
      target: 'w.latest',
    });
    expect(refusal('r', { ...rolling, target: 's', key: 'other' })).toEqual({
      code: 'InvalidOptions',
      field: 'key',
    });
  });

  it('refuses a spec holding a function or a symbol with InvalidOptions', () => {
    expect(refusal('h', { every: 'hour', extra: () => 1 })).toEqual({
      code: 'InvalidOptions',
      field: 'spec',
    });
    expect(refusal('h', { every: Symbol('hour') })).toEqual({ code: 'InvalidOptions', field: 'spec' });
  });

  it('resolves durations and widths', () => {
    const r = resolveRollupSpec(
      'r',
      { layout: 'rolling', window: '7d', step: 3600, target: 's', key: 'sensor' },
      fields,
    );
    expect(r).toMatchObject({ layout: 'rolling', windowMs: 7 * 86_400_000, stepMs: 3_600_000 });
    expect(resolveRollupSpec('m', { every: 'month' }, fields)).toMatchObject({ every: { unit: 'month' } });
    expect(resolveRollupSpec('n', { every: 90 }, { timeField: 'ts', metaField: undefined })).toMatchObject({
      every: { unit: 'fixed', ms: 90_000 },
      groupBy: [],
    });
  });
});
