import { Decimal128, Double, Long } from 'bson';
import { describe, expect, it } from 'vitest';

import { foldMeasurement, makeSlotAcc, mergeSlotAcc } from '../../../src/rollups/accumulator.js';
import { calendarCounters, calendarPaths, calendarSkeleton } from '../../../src/rollups/calendar-writer.js';
import { counterWritesOf } from '../../../src/rollups/counter-writes.js';
import { groupOf } from '../../../src/rollups/group.js';
import { rollingTotals, rollingUpdate } from '../../../src/rollups/rolling-writer.js';
import { slotCounters, slotDocumentId, slotsPaths } from '../../../src/rollups/slots-writer.js';
import { resolveRollupSpec } from '../../../src/rollups/spec.js';
import type {
  ResolvedCalendarSpec,
  ResolvedRollingSpec,
  ResolvedSlotsSpec,
} from '../../../src/rollups/spec.js';
import { threeStepWrite } from '../../../src/rollups/three-step-write.js';
import { counterUpdateDocument } from '../../../src/storage/counter-update.js';
import type { CounterUpdate } from '../../../src/storage/counter-update.js';
import { MemoryStorage } from '../../../src/storage/memory-storage.js';

const fields = { timeField: 'ts', metaField: 'sensor' };

async function all(source: AsyncIterable<Record<string, unknown>>): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for await (const doc of source) out.push(doc);
  return out;
}
const at = (iso: string): number => Date.parse(iso);

describe('slot documents', () => {
  it('are upserted with $setOnInsert, $inc, $min and $max (the documented update)', () => {
    const spec = resolveRollupSpec(
      'hourly',
      { every: 'hour', groupBy: 'sensor.id', fields: { temp: ['min', 'max', 'first', 'last', 'avg'] } },
      fields,
    ) as ResolvedSlotsSpec;
    const group = groupOf(spec, { id: 'a', site: 'x' });
    const acc = makeSlotAcc(at('2024-10-04T10:00:00Z'), 1);
    foldMeasurement(acc, { temp: 21.5 }, at('2024-10-04T10:05:00Z'), spec.fields);
    foldMeasurement(acc, { temp: 23 }, at('2024-10-04T10:35:00Z'), spec.fields);
    foldMeasurement(acc, { temp: 'n/a' }, at('2024-10-04T10:45:00Z'), spec.fields);
    expect(slotDocumentId(group, acc.start)).toBe('0d000000020002000000610000:1728036000000');
    const update = counterUpdateDocument(slotCounters(slotsPaths(spec), group, acc));
    expect(Object.keys(update)).toEqual(['$setOnInsert', '$inc', '$min', '$max']);
    expect(update).toEqual({
      $setOnInsert: { group: 'a', start: new Date('2024-10-04T10:00:00Z') },
      $inc: { count: 3, 'temp.count': 2, 'temp.sum': 44.5 },
      $min: { 'temp.min': 21.5, 'temp.first': { t: new Date('2024-10-04T10:05:00Z'), v: 21.5 } },
      $max: { 'temp.max': 23, 'temp.last': { t: new Date('2024-10-04T10:35:00Z'), v: 23 } },
    });
  });

  it('fold NaN as the smallest number, whatever the order of the values and of the merges', () => {
    const spec = resolveRollupSpec('h', { every: 'hour', fields: { v: ['min', 'max'] } }, fields);
    const orders = [
      [3, Number.NaN, 1],
      [Number.NaN, 3, 1],
      [1, 3, Number.NaN],
    ];
    for (const values of orders) {
      const acc = makeSlotAcc(0, 1);
      for (const [i, v] of values.entries()) foldMeasurement(acc, { v }, i, spec.fields);
      expect([acc.fields[0]?.min, acc.fields[0]?.max]).toEqual([Number.NaN, 3]);
      // The same values folded one per accumulator, then merged.
      const merged = makeSlotAcc(0, 1);
      for (const [i, v] of values.entries()) {
        const one = makeSlotAcc(0, 1);
        foldMeasurement(one, { v }, i, spec.fields);
        mergeSlotAcc(merged, one);
      }
      expect([merged.fields[0]?.min, merged.fields[0]?.max]).toEqual([Number.NaN, 3]);
    }
    const onlyNaN = makeSlotAcc(0, 1);
    foldMeasurement(onlyNaN, { v: Number.NaN }, 0, spec.fields);
    expect([onlyNaN.fields[0]?.min, onlyNaN.fields[0]?.max]).toEqual([Number.NaN, Number.NaN]);
  });

  it('give numerically equal group values one key, as $group gives them one _id', () => {
    const spec = resolveRollupSpec('s', { every: 60, groupBy: 'sensor.id' }, fields);
    const key = (id: unknown) => groupOf(spec, { id }).key;
    expect(
      new Set([key(1), key(new Double(1)), key(Long.fromNumber(1)), key(new Decimal128('1'))]).size,
    ).toBe(1);
    expect(key(-0)).toBe(key(0));
    expect(key(1.5)).toBe(key(new Double(1.5)));
    expect(key(2 ** 40)).toBe(key(Long.fromNumber(2 ** 40)));
    expect(key(Long.fromString('9007199254740993'))).not.toBe(key(Long.fromString('9007199254740992')));
    expect(key(1)).not.toBe(key('1'));
    // Inside a document of named paths too; the value is the one seen.
    const named = resolveRollupSpec('n', { every: 60, groupBy: { id: 'sensor.id' } }, fields);
    expect(groupOf(named, { id: new Double(2) }).key).toBe(groupOf(named, { id: 2 }).key);
    expect(groupOf(named, { id: new Double(2) }).value).toEqual({ id: new Double(2) });
  });

  it('group named paths into a document, and a missing value as null', () => {
    const spec = resolveRollupSpec(
      's',
      { every: 60, groupBy: { site: 'sensor.site', id: 'sensor.id' } },
      fields,
    );
    expect(groupOf(spec, { site: 'x' }).value).toEqual({ site: 'x', id: null });
  });
});

describe('calendar documents', () => {
  const spec = resolveRollupSpec(
    'daily',
    {
      layout: 'calendar',
      period: 'month',
      levels: ['day', 'hour', 'minute'],
      groupBy: 'sensor.id',
      fields: { temp: ['sum'] },
    },
    fields,
  ) as ResolvedCalendarSpec;

  it('are updated by one $inc over every level (the documented update)', () => {
    const acc = makeSlotAcc(at('2015-08-01T00:06:00Z'), 1);
    foldMeasurement(acc, { temp: 2 }, at('2015-08-01T00:06:00Z'), spec.fields);
    const later = makeSlotAcc(at('2015-08-02T01:00:00Z'), 1);
    foldMeasurement(later, { temp: 3 }, at('2015-08-02T01:00:30Z'), spec.fields);
    const paths = calendarPaths(spec);
    const update = counterUpdateDocument(calendarCounters(paths, at('2015-08-01T00:00:00Z'), [acc, later]));
    expect(update).toEqual({
      $inc: {
        count: 2,
        'temp.count': 2,
        'temp.sum': 5,
        'days.0.count': 1,
        'days.0.temp.count': 1,
        'days.0.temp.sum': 2,
        'days.0.hours.0.count': 1,
        'days.0.hours.0.temp.count': 1,
        'days.0.hours.0.temp.sum': 2,
        'days.0.hours.0.minutes.6.count': 1,
        'days.0.hours.0.minutes.6.temp.count': 1,
        'days.0.hours.0.minutes.6.temp.sum': 2,
        'days.1.count': 1,
        'days.1.temp.count': 1,
        'days.1.temp.sum': 3,
        'days.1.hours.1.count': 1,
        'days.1.hours.1.temp.count': 1,
        'days.1.hours.1.temp.sum': 3,
        'days.1.hours.1.minutes.0.count': 1,
        'days.1.hours.1.minutes.0.temp.count': 1,
        'days.1.hours.1.minutes.0.temp.sum': 3,
      },
    });
    // In the order of the documented example: each slot's top, then its path down the levels.
    expect(Object.keys(update.$inc as object).slice(0, 7)).toEqual([
      'count',
      'temp.count',
      'temp.sum',
      'days.0.count',
      'days.0.temp.count',
      'days.0.temp.sum',
      'days.0.hours.0.count',
    ]);
  });

  it('have a zero-filled skeleton with one slot per day of the month, hour and minute', () => {
    const doc = calendarSkeleton(spec, groupOf(spec, { id: 'a' }), at('2024-02-01T00:00:00Z'));
    const days = doc.days as Array<{ start: Date; hours: Array<{ minutes: unknown[] }> }>;
    expect(days).toHaveLength(29);
    expect(days[28]?.start).toEqual(new Date('2024-02-29T00:00:00Z'));
    expect(days[0]?.hours).toHaveLength(24);
    expect(days[0]?.hours[0]?.minutes[59]).toEqual({
      start: new Date('2024-02-01T00:59:00Z'),
      count: 0,
      temp: { count: 0, sum: 0 },
    });
    expect({ ...doc, days: undefined }).toEqual({
      _id: `${groupOf(spec, { id: 'a' }).key}:${at('2024-02-01T00:00:00Z')}`,
      group: 'a',
      start: new Date('2024-02-01T00:00:00Z'),
      count: 0,
      temp: { count: 0, sum: 0 },
      days: undefined,
    });
  });
});

/** A MemoryStorage without `applyCounters`: counters reach it as update documents, as they reach MongoDB. */
class DocumentsOnly extends MemoryStorage {
  constructor() {
    super();
    Object.defineProperty(this, 'applyCounters', { value: undefined });
  }
}

describe.each([
  ['structured (applyCounters)', () => new MemoryStorage()],
  ['as update documents (updateOne)', () => new DocumentsOnly()],
])('threeStepWrite, counters %s', (_label, makeStorage) => {
  const inc: CounterUpdate = { paths: [['count']], operators: ['$inc'], values: [1] };
  const skeleton = () => ({ _id: 'k', count: 0 });
  const targetOf = (storage: MemoryStorage) => ({ storage, counters: counterWritesOf(storage), ns: 'db.c' });

  it('initialises a missing document, then updates it in place', async () => {
    const storage = makeStorage();
    expect(await threeStepWrite(targetOf(storage), 'k', inc, skeleton)).toBe('initialised');
    expect(await threeStepWrite(targetOf(storage), 'k', inc, skeleton)).toBe('updated');
    const [doc] = await all(storage.find('db.c', {}));
    expect(doc).toEqual({ _id: 'k', count: 2 });
  });

  it('tolerates another writer inserting the skeleton between its first two steps', async () => {
    // Arrange: the first $inc finds nothing, then another writer inserts the skeleton.
    const storage = makeStorage();
    const target = targetOf(storage);
    let raced = false;
    const counters = {
      upsert: target.counters.upsert,
      update: async (ns: string, id: string, update: CounterUpdate) => {
        const result = await target.counters.update(ns, id, update);
        if (!raced) {
          raced = true;
          await storage.insertOne('db.c', skeleton());
        }
        return result;
      },
    };
    // Act + Assert: the duplicate key is ignored and the update applied once.
    expect(await threeStepWrite({ ...target, counters }, 'k', inc, skeleton)).toBe('initialisedByOther');
    expect(await all(storage.find('db.c', {}))).toEqual([{ _id: 'k', count: 1 }]);
  });
});

describe('rolling totals', () => {
  const spec = resolveRollupSpec(
    'recent',
    { layout: 'rolling', window: '3h', step: '1h', target: 'sensors', key: 'sensor.id' },
    fields,
  ) as ResolvedRollingSpec;
  const step = (iso: string, count: number) => {
    const acc = makeSlotAcc(at(iso), 0);
    acc.count = count;
    return acc;
  };

  it('are applied by the pipeline: initialise, expire, add or append, late steps below the window dropped', async () => {
    const storage = new MemoryStorage();
    const apply = (iso: string, n: number) =>
      storage.upsertOne('db.sensors', { _id: 's1' }, rollingUpdate(spec, step(iso, n)));
    await storage.upsertOne('db.sensors', { _id: 's1' }, { $set: { title: 'Sensor 1' } });
    await apply('2022-09-12T06:00:00Z', 1);
    await apply('2022-09-12T07:00:00Z', 2);
    await apply('2022-09-12T07:00:00Z', 3);
    await apply('2022-09-12T09:00:00Z', 1); // window 07..09: 06 expires
    await apply('2022-09-12T06:00:00Z', 5); // late, below the window: not added
    const [doc] = await all(storage.find('db.sensors', {}));
    expect(doc).toEqual({
      _id: 's1',
      title: 'Sensor 1',
      totals: [
        { timestamp: new Date('2022-09-12T07:00:00Z'), count: 5 },
        { timestamp: new Date('2022-09-12T09:00:00Z'), count: 1 },
      ],
    });
  });

  it('recomputed from all steps keep the window of the latest one, oldest first', () => {
    expect(
      rollingTotals(spec, [
        step('2022-09-12T09:00:00Z', 1),
        step('2022-09-12T05:00:00Z', 4),
        step('2022-09-12T07:00:00Z', 2),
      ]),
    ).toEqual([
      { timestamp: new Date('2022-09-12T07:00:00Z'), count: 2 },
      { timestamp: new Date('2022-09-12T09:00:00Z'), count: 1 },
    ]);
  });
});
