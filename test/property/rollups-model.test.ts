/**
 * Rollups against the raw measurements (model-based, fast-check commands): random streams of concurrent
 * inserts (late data included), injected storage faults (on bucket and rollup writes alike), deletes,
 * metaField updates and TTL passes. After every command, each rollup equals the aggregation computed
 * from the collection's own `find()` over its raw measurements (`$group` with `$dateTrunc`); inserts also
 * race with a delete and a meta update.
 *
 * Law: a rollup counts exactly the measurements the collection holds, whatever failed or raced.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { BucketEngine } from '../../src/index.js';
import type { TimeseriesCollection } from '../../src/index.js';
import { FaultyStorage } from '../support/faulty-storage.js';

const kIds = ['a', 'b', 'c'] as const;
const kSites = ['x', 'y'] as const;
const kHour = 3_600_000;
const base = Date.UTC(2024, 0, 1);

interface Real {
  readonly engine: BucketEngine;
  readonly coll: TimeseriesCollection;
  readonly storage: FaultyStorage;
  readonly clock: { now: number };
  /** Faults injected so far in this run. */
  readonly injected: { faults: number };
}

/** Cases seen, reported at the end (the issue asks for them). */
const counts = {
  runs: 0,
  inserts: 0,
  races: 0,
  measurements: 0,
  faults: 0,
  deletes: 0,
  metaUpdates: 0,
  ttlPasses: 0,
  checks: 0,
};

type Row = Record<string, unknown>;

/** A generated measurement: series id and site, minutes after `base`, value. */
interface GeneratedMeasurement {
  readonly id: string;
  readonly site: string;
  readonly offsetMinutes: number;
  readonly v: number;
}

const sortBy = (key: (r: Row) => string) => (rows: Row[]) =>
  [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));

async function checkRollups(r: Real): Promise<void> {
  counts.checks++;
  const { coll } = r;
  // A rollup write fails only when a fault was injected (a write that always fails would be hidden by
  // the recomputation that follows it).
  const stats = (await coll.stats()).rollups ?? {};
  const failures = Object.values(stats).reduce((s, x) => s + x.writeFailures, 0);
  expect(failures).toBeLessThanOrEqual(r.injected.faults);
  // Slots: per id and hour.
  const expectedSlots = await coll
    .aggregate([
      {
        $group: {
          _id: { g: { $ifNull: ['$m.id', null] }, t: { $dateTrunc: { date: '$ts', unit: 'hour' } } },
          count: { $sum: 1 },
          sum: { $sum: '$v' },
          min: { $min: '$v' },
          max: { $max: '$v' },
          first: { $min: { t: '$ts', v: '$v' } },
          last: { $max: { t: '$ts', v: '$v' } },
        },
      },
    ])
    .toArray();
  const slots = await coll.rollup('hourly').find();
  const key = (row: Row): string => `${String(row.g)}|${(row.t as Date).toISOString()}`;
  expect(
    sortBy(key)(
      slots.map((d) => {
        const v = d.v as Row;
        return {
          g: d.group,
          t: d.start,
          count: d.count,
          vcount: v.count,
          sum: v.sum,
          min: v.min,
          max: v.max,
          first: v.first,
          last: v.last,
          avg: v.avg,
        };
      }),
    ),
  ).toEqual(
    sortBy(key)(
      expectedSlots.map((e) => {
        const id = e._id as Row;
        return {
          g: id.g,
          t: id.t,
          count: e.count,
          vcount: e.count,
          sum: e.sum,
          min: e.min,
          max: e.max,
          first: e.first,
          last: e.last,
          avg: (e.sum as number) / (e.count as number),
        };
      }),
    ),
  );

  // Calendar: per site, day document, hour slots.
  const expectedHours = await coll
    .aggregate([
      {
        $group: {
          _id: {
            g: { site: { $ifNull: ['$m.site', null] } },
            t: { $dateTrunc: { date: '$ts', unit: 'hour' } },
          },
          count: { $sum: 1 },
          sum: { $sum: '$v' },
        },
      },
    ])
    .toArray();
  const days = await coll.rollup('daily').find();
  const hours: Row[] = [];
  for (const day of days) {
    const list = (day.hours as Row[]).filter((h) => (h.count as number) > 0);
    // A document's totals are the sum of its slots, and every document holds measurements.
    expect(day.count).toBe(list.reduce((s, h) => s + (h.count as number), 0));
    expect((day.v as Row).sum).toBe(list.reduce((s, h) => s + ((h.v as Row).sum as number), 0));
    expect(day.count).toBeGreaterThan(0);
    for (const h of list) hours.push({ g: day.group, t: h.start, count: h.count, sum: (h.v as Row).sum });
  }
  const hourKey = (row: Row): string => `${JSON.stringify(row.g)}|${(row.t as Date).toISOString()}`;
  expect(sortBy(hourKey)(hours)).toEqual(
    sortBy(hourKey)(
      expectedHours.map((e) => ({ g: (e._id as Row).g, t: (e._id as Row).t, count: e.count, sum: e.sum })),
    ),
  );

  // Rolling: per id, the 3 hourly steps ending at the id's latest step.
  const expectedSteps = expectedSlots.filter((e) => (e._id as Row).g !== null);
  const latest = new Map<string, number>();
  for (const e of expectedSteps) {
    const id = e._id as Row;
    latest.set(id.g as string, Math.max(latest.get(id.g as string) ?? -Infinity, (id.t as Date).getTime()));
  }
  const expectedTotals = new Map<string, Row[]>();
  for (const e of expectedSteps) {
    const id = e._id as Row;
    const t = (id.t as Date).getTime();
    if (t < (latest.get(id.g as string) as number) - 2 * kHour) continue;
    const list = expectedTotals.get(id.g as string) ?? [];
    list.push({ timestamp: id.t, count: e.count, v: e.sum });
    expectedTotals.set(id.g as string, list);
  }
  await coll.rollup('recent').find(); // brings the rollups up to date
  const stored = new Map<string, Row[]>();
  for await (const doc of r.storage.find('tsbuckets.entities', {})) {
    const totals = doc.totals as Row[] | undefined;
    if (totals !== undefined && totals.length > 0) stored.set(doc._id as string, totals);
  }
  const byTime = sortBy((e) => (e.timestamp as Date).toISOString());
  expect(new Map([...stored].map(([k, v]) => [k, byTime(v)]))).toEqual(
    new Map([...expectedTotals].map(([k, v]) => [k, byTime(v)])),
  );
}

const measurementArb = fc.record({
  id: fc.constantFrom(...kIds),
  site: fc.constantFrom(...kSites),
  // Over three days, so that late data lands in closed slots, periods and windows.
  offsetMinutes: fc.integer({ min: 0, max: 3 * 24 * 60 }),
  v: fc.integer({ min: -50, max: 50 }),
});

class InsertCommand implements fc.AsyncCommand<object, Real> {
  constructor(
    readonly writers: ReadonlyArray<{
      docs: ReadonlyArray<GeneratedMeasurement>;
      ordered: boolean;
    }>,
    readonly faults: ReadonlyArray<number>,
  ) {}
  check(): boolean {
    return true;
  }
  async run(_m: object, r: Real): Promise<void> {
    // Each fault fails one upcoming write (a bucket write or a rollup write) with a storage error.
    for (const f of this.faults) {
      for (let i = 0; i < f; i++) r.storage.faults.push({ kind: 'block', gate: Promise.resolve() });
      r.storage.faults.push({ kind: 'fail', error: new Error('injected storage fault') });
    }
    counts.inserts++;
    counts.faults += this.faults.length;
    r.injected.faults += this.faults.length;
    await Promise.allSettled(
      this.writers.map((w) => {
        counts.measurements += w.docs.length;
        return r.coll.insertMany(
          w.docs.map((d) => ({
            ts: new Date(base + d.offsetMinutes * 60_000),
            m: { id: d.id, site: d.site },
            v: d.v,
          })),
          { ordered: w.ordered },
        );
      }),
    );
    r.storage.faults.length = 0;
    await checkRollups(r);
  }
  toString(): string {
    return `insert(${JSON.stringify(this.writers)}, faults ${JSON.stringify(this.faults)})`;
  }
}

/** Inserts racing with a delete and a meta update (the gate orders them; the result must still be exact). */
class RacingWritesCommand implements fc.AsyncCommand<object, Real> {
  constructor(
    readonly docs: ReadonlyArray<GeneratedMeasurement>,
    readonly id: string,
    readonly site: string,
  ) {}
  check(): boolean {
    return true;
  }
  async run(_m: object, r: Real): Promise<void> {
    counts.races++;
    counts.measurements += this.docs.length;
    await Promise.allSettled([
      r.coll.insertMany(
        this.docs.map((d) => ({
          ts: new Date(base + d.offsetMinutes * 60_000),
          m: { id: d.id, site: d.site },
          v: d.v,
        })),
        { ordered: false },
      ),
      r.coll.deleteMany({ 'm.id': this.id, v: { $gt: 0 } }),
      r.coll.updateMany({ 'm.site': this.site }, { $set: { 'm.site': this.site === 'x' ? 'y' : 'x' } }),
    ]);
    await checkRollups(r);
  }
  toString(): string {
    return `race(insert ${JSON.stringify(this.docs)}, delete ${this.id}, flip ${this.site})`;
  }
}

class DeleteCommand implements fc.AsyncCommand<object, Real> {
  constructor(readonly filter: Record<string, unknown>) {}
  check(): boolean {
    return true;
  }
  async run(_m: object, r: Real): Promise<void> {
    counts.deletes++;
    await r.coll.deleteMany(this.filter);
    await checkRollups(r);
  }
  toString(): string {
    return `deleteMany(${JSON.stringify(this.filter)})`;
  }
}

class MetaUpdateCommand implements fc.AsyncCommand<object, Real> {
  constructor(
    readonly id: string,
    readonly set: Record<string, string>,
  ) {}
  check(): boolean {
    return true;
  }
  async run(_m: object, r: Real): Promise<void> {
    counts.metaUpdates++;
    await r.coll.updateMany({ 'm.id': this.id }, { $set: this.set });
    await checkRollups(r);
  }
  toString(): string {
    return `updateMany(${this.id} -> ${JSON.stringify(this.set)})`;
  }
}

class TTLCommand implements fc.AsyncCommand<object, Real> {
  constructor(readonly advanceHours: number) {}
  check(): boolean {
    return true;
  }
  async run(_m: object, r: Real): Promise<void> {
    counts.ttlPasses++;
    r.clock.now += this.advanceHours * kHour;
    await r.engine.runTTLMonitor();
    await checkRollups(r);
  }
  toString(): string {
    return `ttl(+${this.advanceHours}h)`;
  }
}

const commandsArb = fc.commands(
  [
    fc
      .tuple(
        fc.array(
          fc.record({
            docs: fc.array(measurementArb, { minLength: 1, maxLength: 12 }),
            ordered: fc.boolean(),
          }),
          {
            minLength: 1,
            maxLength: 3,
          },
        ),
        fc.array(fc.integer({ min: 0, max: 6 }), { maxLength: 2 }),
      )
      .map(([writers, faults]) => new InsertCommand(writers, faults)),
    fc
      .oneof(
        fc.record({ v: fc.record({ $lt: fc.integer({ min: -50, max: 0 }) }) }),
        fc.constantFrom(...kIds).map((id) => ({ 'm.id': id })),
        fc.integer({ min: 0, max: 72 }).map((h) => ({ ts: { $gte: new Date(base + h * kHour) } })),
      )
      .map((filter) => new DeleteCommand(filter)),
    fc
      .tuple(
        fc.constantFrom(...kIds),
        fc.oneof(
          fc.constantFrom(...kSites).map((site) => ({ 'm.site': site })),
          fc.constantFrom(...kIds).map((id) => ({ 'm.id': id })),
        ),
      )
      .map(([id, set]) => new MetaUpdateCommand(id, set)),
    fc.integer({ min: 1, max: 30 }).map((h) => new TTLCommand(h)),
    fc
      .tuple(
        fc.array(measurementArb, { minLength: 1, maxLength: 12 }),
        fc.constantFrom(...kIds),
        fc.constantFrom(...kSites),
      )
      .map(([docs, id, site]) => new RacingWritesCommand(docs, id, site)),
  ],
  { maxCommands: 12 },
);

describe('rollups model', () => {
  it('every rollup equals the aggregation of the raw measurements after every command', async () => {
    await fc.assert(
      fc.asyncProperty(commandsArb, async (commands) => {
        // Arrange: a collection with a TTL, one rollup of each layout, an injectable clock.
        counts.runs++;
        const clock = { now: base + 3 * 24 * kHour };
        const storage = new FaultyStorage();
        const engine = new BucketEngine({ storage, clock: () => clock.now, ttlMonitor: 'disabled' });
        const coll = await engine.createCollection('w', {
          timeseries: { timeField: 'ts', metaField: 'm', granularity: 'minutes' },
          expireAfterSeconds: 24 * 3600,
        });
        await coll.createRollup('hourly', {
          every: 'hour',
          groupBy: 'm.id',
          fields: { v: ['count', 'sum', 'min', 'max', 'first', 'last', 'avg'] },
        });
        await coll.createRollup('daily', {
          layout: 'calendar',
          period: 'day',
          levels: ['hour'],
          groupBy: { site: 'm.site' },
          fields: { v: ['sum'] },
        });
        await coll.createRollup('recent', {
          layout: 'rolling',
          window: '3h',
          step: '1h',
          target: 'entities',
          key: 'm.id',
          sum: ['v'],
        });
        // Act + Assert: every command checks the rollups against the raw measurements.
        await fc.asyncModelRun(
          () => ({ model: {}, real: { engine, coll, storage, clock, injected: { faults: 0 } } }),
          commands,
        );
        await engine.close();
      }),
      { numRuns: 150 },
    );
    console.log(`rollups model: ${JSON.stringify(counts)}`);
    expect(counts.checks).toBeGreaterThan(counts.runs);
  }, 600_000);
});
