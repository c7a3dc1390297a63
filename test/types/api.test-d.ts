/**
 * Type-level tests of the public API: `tsc` (run by `npm run typecheck`, and by vitest's typecheck mode
 * in `npm test`) must reject each line marked `@ts-expect-error`. If a type is loosened so that a line
 * compiles, the directive itself becomes an error (TS2578 "Unused '@ts-expect-error' directive") and
 * both runs fail.
 */
import type { ObjectId } from 'bson';
import { describe, expectTypeOf, it } from 'vitest';

import { BucketEngine } from '../../src/index.js';
import type {
  BucketCatalogServerStatus,
  CollModOptions,
  CreateCollectionOptions,
  InsertManyResult,
  InsertOneResult,
  MeasurementDocument,
  ReaderCursor,
  RollupDocument,
  ServerParameters,
  TimeseriesCollection,
} from '../../src/index.js';

interface Weather {
  readonly _id?: ObjectId;
  readonly ts: Date;
  readonly sensor: { readonly id: number };
  readonly temp: number;
}

declare const engine: BucketEngine;
declare const weather: TimeseriesCollection<Weather>;
declare const plain: TimeseriesCollection;

describe('createCollection options', () => {
  it('accept what MongoDB accepts', () => {
    expectTypeOf<Parameters<BucketEngine['createCollection']>[1]>().toEqualTypeOf<CreateCollectionOptions>();
    void engine.createCollection('a', { timeseries: { timeField: 'ts', granularity: 'hours' } });
    void engine.createCollection('b', {
      timeseries: { timeField: 'ts', metaField: 'm', bucketMaxSpanSeconds: 60, bucketRoundingSeconds: 60 },
      expireAfterSeconds: 3600,
    });
  });

  it('take undefined for an absent optional field (exactOptionalPropertyTypes users build options from flags)', () => {
    const metaField: string | undefined = undefined;
    void engine.createCollection('d', {
      timeseries: { timeField: 'ts', metaField },
      expireAfterSeconds: undefined,
    });
    new BucketEngine({ dbName: undefined, parameters: { timeseriesBucketMaxCount: undefined } });
  });

  it('reject an unknown granularity, a missing timeField, unknown fields and wrong types', () => {
    // @ts-expect-error 'weeks' is not a granularity
    void engine.createCollection('c', { timeseries: { timeField: 'ts', granularity: 'weeks' } });
    // @ts-expect-error timeField is required
    void engine.createCollection('c', { timeseries: { metaField: 'm' } });
    // @ts-expect-error timeseries is required
    void engine.createCollection('c', {});
    // @ts-expect-error unknown option
    void engine.createCollection('c', { timeseries: { timeField: 'ts' }, capped: true });
    // @ts-expect-error unknown timeseries option
    void engine.createCollection('c', { timeseries: { timeField: 'ts', bucketMaxSpan: 60 } });
    // @ts-expect-error seconds are numbers
    void engine.createCollection('c', { timeseries: { timeField: 'ts', bucketMaxSpanSeconds: '60' } });
  });
});

describe('collMod options', () => {
  it('accept MongoDB names and reject others', () => {
    expectTypeOf<Parameters<TimeseriesCollection<Weather>['collMod']>[0]>().toEqualTypeOf<CollModOptions>();
    void weather.collMod({ granularity: 'minutes', expireAfterSeconds: 'off' });
    // @ts-expect-error 'days' is not a granularity
    void weather.collMod({ granularity: 'days' });
    // @ts-expect-error only 'off' or a number
    void weather.collMod({ expireAfterSeconds: 'never' });
    // @ts-expect-error timeField cannot change
    void weather.collMod({ timeField: 't' });
  });
});

describe('engine options and server parameters', () => {
  it('accept MongoDB parameter names and the documented enumerations', () => {
    const parameters: ServerParameters = {
      timeseriesBucketMaxCount: 500,
      timeseriesValidateCompressedBuckets: false,
    };
    new BucketEngine({ parameters, compression: 'none', reopening: 'disabled', ttlMonitorSleepSecs: 5 });
  });

  it('reject unknown options, unknown parameters and wrong values', () => {
    // @ts-expect-error misspelt option
    new BucketEngine({ ttlMonitorSleepSeconds: 5 });
    // @ts-expect-error misspelt server parameter
    new BucketEngine({ parameters: { timeseriesBucketMaxCnt: 5 } });
    // @ts-expect-error parameters are numbers
    new BucketEngine({ parameters: { timeseriesBucketMaxSize: '128kB' } });
    // @ts-expect-error not a compression mode
    new BucketEngine({ compression: 'always' });
    // @ts-expect-error the clock returns epoch milliseconds
    new BucketEngine({ clock: () => new Date() });
  });
});

describe('find and aggregate are generic like the driver', () => {
  it('find defaults to the collection schema and takes an explicit document type', () => {
    expectTypeOf(weather.find({ temp: { $gt: 20 } })).toEqualTypeOf<ReaderCursor<Weather>>();
    expectTypeOf(weather.find().toArray()).resolves.toEqualTypeOf<Weather[]>();
    expectTypeOf(
      weather.find<{ ts: Date; temp: number }>({}, { projection: { ts: 1, temp: 1 } }).toArray(),
    ).resolves.toEqualTypeOf<Array<{ ts: Date; temp: number }>>();
    expectTypeOf(plain.find().toArray()).resolves.toEqualTypeOf<MeasurementDocument[]>();
  });

  it('aggregate defaults to plain documents and takes the output type', () => {
    expectTypeOf(weather.aggregate([{ $count: 'n' }])).toEqualTypeOf<ReaderCursor>();
    expectTypeOf(weather.aggregate<{ n: number }>([{ $count: 'n' }]).toArray()).resolves.toEqualTypeOf<
      Array<{ n: number }>
    >();
  });

  it('createCollection and collection take the schema like db.collection<TSchema>()', () => {
    expectTypeOf(
      engine.createCollection<Weather>('w', { timeseries: { timeField: 'ts' } }),
    ).resolves.toEqualTypeOf<TimeseriesCollection<Weather>>();
    expectTypeOf(engine.collection<Weather>('w')).toEqualTypeOf<TimeseriesCollection<Weather> | undefined>();
  });
});

describe('inserts are typed by the schema and return the driver-shaped results', () => {
  it('insertOne / insertMany check the measurement type', () => {
    const m: Weather = { ts: new Date(), sensor: { id: 1 }, temp: 20 };
    void weather.insertOne(m);
    // @ts-expect-error temp is a number
    void weather.insertOne({ ts: new Date(), sensor: { id: 1 }, temp: '20' });
    // @ts-expect-error sensor is missing
    void weather.insertMany([{ ts: new Date(), temp: 20 }]);
  });

  it('results carry acknowledged, insertedId(s) typed from the schema _id, and insertedCount', () => {
    expectTypeOf(weather.insertOne({ ts: new Date(), sensor: { id: 1 }, temp: 1 })).resolves.toEqualTypeOf<
      InsertOneResult<Weather>
    >();
    expectTypeOf<InsertOneResult<Weather>['insertedId']>().toEqualTypeOf<ObjectId | undefined>();
    expectTypeOf<InsertOneResult<Weather>['acknowledged']>().toEqualTypeOf<true>();
    expectTypeOf<InsertManyResult<Weather>['insertedIds']>().toEqualTypeOf<
      Readonly<Record<number, ObjectId>>
    >();
    expectTypeOf<InsertManyResult['insertedIds']>().toEqualTypeOf<Readonly<Record<number, unknown>>>();
    expectTypeOf<InsertManyResult['insertedCount']>().toEqualTypeOf<number>();
  });
});

describe('serverStatus', () => {
  it('bucketCatalog is always present', () => {
    expectTypeOf(engine.serverStatus().bucketCatalog).toEqualTypeOf<BucketCatalogServerStatus>();
    expectTypeOf(engine.serverStatus().bucketCatalog.numOpenBuckets).toEqualTypeOf<number>();
  });
});

describe('rollups', () => {
  it('take a spec of one of the three layouts and return documents from the read handle', () => {
    void plain.createRollup('hourly', { every: 'hour', fields: { temp: ['avg', 'max'] } });
    void plain.createRollup('days', { layout: 'calendar', period: 'month', levels: ['day', 'hour'] });
    void plain.createRollup('recent', {
      layout: 'rolling',
      window: '24h',
      step: '1h',
      target: 's',
      key: 'm',
    });
    // @ts-expect-error 'week' is not a slot width
    void plain.createRollup('x', { every: 'week' });
    const calendarWithMax = {
      layout: 'calendar',
      period: 'day',
      levels: ['hour'],
      fields: { t: ['max'] },
    } as const;
    // @ts-expect-error a calendar keeps sums only
    void plain.createRollup('x', calendarWithMax);
    expectTypeOf(plain.rollup('hourly').find()).toEqualTypeOf<Promise<RollupDocument[]>>();
  });
});
