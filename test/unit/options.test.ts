import { totalmem } from 'node:os';

import { Double, Int32, Long } from 'bson';
import { describe, expect, it } from 'vitest';

import { ErrorCodes, TimeseriesError } from '../../src/errors.js';
import type { ErrorCodeName } from '../../src/errors.js';
import {
  DEFAULT_SERVER_PARAMETERS,
  GRANULARITY_PRESETS,
  MAX_BUCKETING_SECONDS,
  areTimeseriesBucketsFixed,
  resolveCollMod,
  resolveCollectionOptions,
  resolveServerParameters,
  sameCollectionOptions,
} from '../../src/options.js';
import type { ResolvedCollectionOptions } from '../../src/options.js';

const NS = 'db.weather';
/** A fixed "now" (2024-01-01T00:00:00Z) so the TTL upper bound is deterministic. */
const NOW = Date.UTC(2024, 0, 1);
const clock = (): number => NOW;

interface ExpectedError {
  readonly codeName: ErrorCodeName;
  readonly message: string;
  readonly field: string;
}

/** Assert that `fn` throws a TimeseriesError with MongoDB's code, codeName, exact message and field. */
function expectError(fn: () => unknown, expected: ExpectedError): void {
  let thrown: unknown;
  try {
    fn();
  } catch (e) {
    thrown = e;
  }
  expect(TimeseriesError.isTimeseriesError(thrown)).toBe(true);
  const err = thrown as TimeseriesError;
  expect({ code: err.code, codeName: err.codeName, message: err.message, field: err.field }).toEqual({
    code: ErrorCodes[expected.codeName],
    codeName: expected.codeName,
    message: expected.message,
    field: expected.field,
  });
}

function create(timeseries: unknown, extra: Record<string, unknown> = {}): ResolvedCollectionOptions {
  return resolveCollectionOptions(NS, { timeseries, ...extra }, clock);
}

describe('resolveCollectionOptions: valid options', () => {
  it('defaults to granularity seconds (span 3600, rounding 60) and stores granularity + span only', () => {
    // Arrange / Act
    const o = create({ timeField: 'ts' });
    // Assert
    expect(o).toEqual({
      timeField: 'ts',
      metaField: undefined,
      granularity: 'seconds',
      bucketMaxSpanSeconds: 3600,
      bucketRoundingSeconds: 60,
      bucketingParametersHaveChanged: false,
      expireAfterSeconds: undefined,
      storedOptions: { timeseries: { timeField: 'ts', granularity: 'seconds', bucketMaxSpanSeconds: 3600 } },
    });
    expect(Object.keys(o.storedOptions.timeseries)).toEqual([
      'timeField',
      'granularity',
      'bucketMaxSpanSeconds',
    ]);
  });

  it.each([
    ['seconds', 60, 3600],
    ['minutes', 3600, 86400],
    ['hours', 86400, 2592000],
  ] as const)('granularity %s uses rounding %i and span %i', (granularity, rounding, span) => {
    const o = create({ timeField: 't', metaField: 'm', granularity });
    expect([o.granularity, o.bucketRoundingSeconds, o.bucketMaxSpanSeconds]).toEqual([
      granularity,
      rounding,
      span,
    ]);
    expect(o.storedOptions.timeseries).toEqual({
      timeField: 't',
      metaField: 'm',
      granularity,
      bucketMaxSpanSeconds: span,
    });
    expect(GRANULARITY_PRESETS[granularity]).toEqual({
      bucketRoundingSeconds: rounding,
      bucketMaxSpanSeconds: span,
    });
  });

  it.each(['seconds', 'minutes', 'hours'] as const)(
    'granularity %s accepts its preset bucketMaxSpanSeconds',
    (granularity) => {
      const span = GRANULARITY_PRESETS[granularity].bucketMaxSpanSeconds;
      expect(create({ timeField: 't', granularity, bucketMaxSpanSeconds: span }).bucketMaxSpanSeconds).toBe(
        span,
      );
    },
  );

  it('custom bucketing stores both seconds values and no granularity', () => {
    const o = create({ timeField: 't', bucketRoundingSeconds: 4000, bucketMaxSpanSeconds: 4000 });
    expect([o.granularity, o.bucketRoundingSeconds, o.bucketMaxSpanSeconds]).toEqual([undefined, 4000, 4000]);
    expect(o.storedOptions.timeseries).toEqual({
      timeField: 't',
      bucketRoundingSeconds: 4000,
      bucketMaxSpanSeconds: 4000,
    });
  });

  it('accepts the bounds 1 and 31536000 for custom bucketing', () => {
    expect(
      create({ timeField: 't', bucketRoundingSeconds: 1, bucketMaxSpanSeconds: 1 }).bucketMaxSpanSeconds,
    ).toBe(1);
    const max = MAX_BUCKETING_SECONDS;
    expect(
      create({ timeField: 't', bucketRoundingSeconds: max, bucketMaxSpanSeconds: max }).bucketMaxSpanSeconds,
    ).toBe(31536000);
  });

  it('treats null and undefined optional fields as absent (IDL rule)', () => {
    const o = create(
      { timeField: 't', metaField: null, granularity: undefined, bucketMaxSpanSeconds: null },
      { expireAfterSeconds: null },
    );
    expect([o.metaField, o.granularity, o.expireAfterSeconds]).toEqual([undefined, 'seconds', undefined]);
  });

  it('accepts js-bson numbers (Int32, Long, Double) and truncates doubles like safeNumberInt', () => {
    const o = create(
      { timeField: 't', bucketRoundingSeconds: new Int32(600), bucketMaxSpanSeconds: new Double(600.9) },
      { expireAfterSeconds: Long.fromNumber(100) },
    );
    expect([o.bucketRoundingSeconds, o.bucketMaxSpanSeconds, o.expireAfterSeconds]).toEqual([600, 600, 100]);
  });

  it('stores expireAfterSeconds', () => {
    const o = create({ timeField: 't' }, { expireAfterSeconds: 0 });
    expect(o.expireAfterSeconds).toBe(0);
    expect(o.storedOptions.expireAfterSeconds).toBe(0);
  });

  it("accepts 'capped: false' (MongoDB skips it)", () => {
    expect(create({ timeField: 't' }, { capped: false }).timeField).toBe('t');
  });

  it('returns deeply frozen configs and frozen presets', () => {
    const o = create({ timeField: 't', metaField: 'm' }, { expireAfterSeconds: 10 });
    expect(Object.isFrozen(o)).toBe(true);
    expect(Object.isFrozen(o.storedOptions)).toBe(true);
    expect(Object.isFrozen(o.storedOptions.timeseries)).toBe(true);
    expect(Object.isFrozen(GRANULARITY_PRESETS)).toBe(true);
    expect(Object.isFrozen(GRANULARITY_PRESETS.hours)).toBe(true);
    expect(Object.isFrozen(DEFAULT_SERVER_PARAMETERS)).toBe(true);
  });
});

describe('resolveCollectionOptions: untrusted field names', () => {
  it('an own __proto__ key in timeseries is an unknown field and never touches a prototype', () => {
    const ts = JSON.parse('{"timeField":"t","__proto__":{"polluted":1}}') as object;
    expectError(() => create(ts), {
      codeName: 'IDLUnknownField',
      message: "BSON field 'create.timeseries.__proto__' is an unknown field.",
      field: 'timeseries.__proto__',
    });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('an own __proto__ key in the create options is an unknown field', () => {
    const options = JSON.parse('{"timeseries":{"timeField":"t"},"__proto__":{"capped":true}}') as unknown;
    expectError(() => resolveCollectionOptions(NS, options, clock), {
      codeName: 'IDLUnknownField',
      message: "BSON field 'create.__proto__' is an unknown field.",
      field: '__proto__',
    });
  });

  it('a constructor key is an unknown field', () => {
    expectError(() => create({ timeField: 't', constructor: 'x' }), {
      codeName: 'IDLUnknownField',
      message: "BSON field 'create.timeseries.constructor' is an unknown field.",
      field: 'timeseries.constructor',
    });
  });

  it('inherited properties are ignored (own properties only)', () => {
    const inherited = Object.create({ timeseries: { timeField: 't' } }) as object;
    expectError(() => resolveCollectionOptions(NS, inherited, clock), {
      codeName: 'IDLFailedToParse',
      message: "BSON field 'create.timeseries' is missing but a required field",
      field: 'timeseries',
    });
  });
});

describe('resolveCollectionOptions: refusals', () => {
  const cases: ReadonlyArray<readonly [string, () => unknown, ExpectedError]> = [
    [
      'options not an object',
      () => resolveCollectionOptions(NS, 'x', clock),
      {
        codeName: 'TypeMismatch',
        message: "Collection options must be an object, but got type 'string'",
        field: 'options',
      },
    ],
    [
      'timeseries is a string',
      () => create(''),
      {
        codeName: 'TypeMismatch',
        message: "BSON field 'create.timeseries' is the wrong type 'string', expected type 'object'",
        field: 'timeseries',
      },
    ],
    [
      'timeseries is an array',
      () => create([]),
      {
        codeName: 'TypeMismatch',
        message: "BSON field 'create.timeseries' is the wrong type 'array', expected type 'object'",
        field: 'timeseries',
      },
    ],
    [
      'timeseries missing',
      () => resolveCollectionOptions(NS, {}, clock),
      {
        codeName: 'IDLFailedToParse',
        message: "BSON field 'create.timeseries' is missing but a required field",
        field: 'timeseries',
      },
    ],
    [
      'timeField not a string',
      () => create({ timeField: 100 }),
      {
        codeName: 'TypeMismatch',
        message: "BSON field 'create.timeseries.timeField' is the wrong type 'int', expected type 'string'",
        field: 'timeseries.timeField',
      },
    ],
    [
      'metaField not a string',
      () => create({ timeField: 't', metaField: 1.5 }),
      {
        codeName: 'TypeMismatch',
        message:
          "BSON field 'create.timeseries.metaField' is the wrong type 'double', expected type 'string'",
        field: 'timeseries.metaField',
      },
    ],
    [
      'timeField missing',
      () => create({ metaField: 'm' }),
      {
        codeName: 'IDLFailedToParse',
        message: "BSON field 'create.timeseries.timeField' is missing but a required field",
        field: 'timeseries.timeField',
      },
    ],
    [
      'unknown timeseries sub-option',
      () => create({ timeField: 't', invalidOption: {} }),
      {
        codeName: 'IDLUnknownField',
        message: "BSON field 'create.timeseries.invalidOption' is an unknown field.",
        field: 'timeseries.invalidOption',
      },
    ],
    [
      'unknown create option',
      () => create({ timeField: 't' }, { foo: 1 }),
      { codeName: 'IDLUnknownField', message: "BSON field 'create.foo' is an unknown field.", field: 'foo' },
    ],
    [
      'granularity not in the enum',
      () => create({ timeField: 't', granularity: 'days' }),
      {
        codeName: 'BadValue',
        message: "Enumeration value 'days' for field 'create.timeseries.granularity' is not a valid value.",
        field: 'timeseries.granularity',
      },
    ],
    [
      'granularity not a string',
      () => create({ timeField: 't', granularity: true }),
      {
        codeName: 'TypeMismatch',
        message:
          "BSON field 'create.timeseries.granularity' is the wrong type 'bool', expected type 'string'",
        field: 'timeseries.granularity',
      },
    ],
    [
      'bucketMaxSpanSeconds not a number',
      () => create({ timeField: 't', bucketMaxSpanSeconds: '60' }),
      {
        codeName: 'TypeMismatch',
        message:
          "BSON field 'create.timeseries.bucketMaxSpanSeconds' is the wrong type 'string', expected types '[long, int, decimal, double']",
        field: 'timeseries.bucketMaxSpanSeconds',
      },
    ],
    [
      'bucketing seconds below 1',
      () => create({ timeField: 't', bucketRoundingSeconds: -1, bucketMaxSpanSeconds: -1 }),
      {
        codeName: 'BadValue',
        message: "BSON field 'create.timeseries.bucketRoundingSeconds' value must be >= 1, actual value '-1'",
        field: 'timeseries.bucketRoundingSeconds',
      },
    ],
    [
      'bucketing seconds above 365 days',
      () =>
        create({
          timeField: 't',
          bucketMaxSpanSeconds: 86400 * 365 + 1,
          bucketRoundingSeconds: 86400 * 365 + 1,
        }),
      {
        codeName: 'BadValue',
        message:
          "BSON field 'create.timeseries.bucketMaxSpanSeconds' value must be <= 31536000, actual value '31536001'",
        field: 'timeseries.bucketMaxSpanSeconds',
      },
    ],
    [
      'embedded NUL in timeField',
      () => create({ timeField: 't\0x' }),
      {
        codeName: 'BadValue',
        message: "The 'timeField' or the 'metaField' cannot contain embedded null bytes",
        field: 'timeseries.timeField',
      },
    ],
    [
      'embedded NUL in metaField',
      () => create({ timeField: 't', metaField: '\0' }),
      {
        codeName: 'BadValue',
        message: "The 'timeField' or the 'metaField' cannot contain embedded null bytes",
        field: 'timeseries.metaField',
      },
    ],
    [
      'dotted timeField',
      () => create({ timeField: 'sub.time' }),
      {
        codeName: 'InvalidOptions',
        message: "db.weather: 'timeField' must be a top-level field and not contain a '.'",
        field: 'timeseries.timeField',
      },
    ],
    [
      'dotted metaField',
      () => create({ timeField: 'time', metaField: 'sub.meta' }),
      {
        codeName: 'InvalidOptions',
        message: "db.weather: 'metaField' must be a top-level field and not contain a '.'",
        field: 'timeseries.metaField',
      },
    ],
    [
      'metaField _id',
      () => create({ timeField: 'time', metaField: '_id' }),
      { codeName: 'InvalidOptions', message: `'metaField' cannot be "_id"`, field: 'timeseries.metaField' },
    ],
    [
      'metaField equal to timeField',
      () => create({ timeField: 'time', metaField: 'time' }),
      {
        codeName: 'InvalidOptions',
        message: "'metaField' cannot be the same as 'timeField'",
        field: 'timeseries.metaField',
      },
    ],
    [
      '$-prefixed timeField',
      () => create({ timeField: '$t' }),
      {
        codeName: 'BadValue',
        message: "The 'timeField' or 'metaField' cannot start with '$'",
        field: 'timeseries.timeField',
      },
    ],
    [
      '$-prefixed metaField',
      () => create({ timeField: 't', metaField: '$m' }),
      {
        codeName: 'BadValue',
        message: "The 'timeField' or 'metaField' cannot start with '$'",
        field: 'timeseries.metaField',
      },
    ],
    [
      'granularity with bucketRoundingSeconds (even the preset)',
      () =>
        create({
          timeField: 't',
          granularity: 'seconds',
          bucketMaxSpanSeconds: 3600,
          bucketRoundingSeconds: 60,
        }),
      {
        codeName: 'InvalidOptions',
        message: "Time-series 'bucketRoundingSeconds' cannot be set alongside the granularity parameter",
        field: 'timeseries.bucketRoundingSeconds',
      },
    ],
    [
      'granularity with a non-preset bucketMaxSpanSeconds',
      () => create({ timeField: 't', granularity: 'minutes', bucketMaxSpanSeconds: 3600 }),
      {
        codeName: 'InvalidOptions',
        message:
          "Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the default of 86400 for the provided granularity",
        field: 'timeseries.bucketMaxSpanSeconds',
      },
    ],
    [
      'granularity hours with custom seconds',
      () =>
        create({
          timeField: 't',
          granularity: 'hours',
          bucketRoundingSeconds: 4000,
          bucketMaxSpanSeconds: 4000,
        }),
      {
        codeName: 'InvalidOptions',
        message:
          "Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the default of 2592000 for the provided granularity",
        field: 'timeseries.bucketMaxSpanSeconds',
      },
    ],
    ...(
      [
        ['only bucketRoundingSeconds', { bucketRoundingSeconds: 4000 }],
        ['only bucketMaxSpanSeconds', { bucketMaxSpanSeconds: 4000 }],
        ['only bucketMaxSpanSeconds (the default)', { bucketMaxSpanSeconds: 3600 }],
        ['unequal seconds values', { bucketRoundingSeconds: 100, bucketMaxSpanSeconds: 50 }],
      ] as const
    ).map(
      ([name, extra]) =>
        [
          name,
          () => create({ timeField: 't', ...extra }),
          {
            codeName: 'InvalidOptions',
            message: "Time-series 'bucketRoundingSeconds' must be equal to 'bucketMaxSpanSeconds'",
            field: 'timeseries.bucketRoundingSeconds',
          },
        ] as const,
    ),
    [
      'negative expireAfterSeconds',
      () => create({ timeField: 't' }, { expireAfterSeconds: Long.fromNumber(-10) }),
      {
        codeName: 'InvalidOptions',
        message: "TTL index 'expireAfterSeconds' option cannot be less than 0",
        field: 'expireAfterSeconds',
      },
    ],
    [
      'expireAfterSeconds of 2^62',
      () => create({ timeField: 't' }, { expireAfterSeconds: Long.fromString('4611686018427387904') }),
      {
        codeName: 'InvalidOptions',
        message:
          "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number",
        field: 'expireAfterSeconds',
      },
    ],
    [
      'expireAfterSeconds longer than the time since the epoch',
      () => create({ timeField: 't' }, { expireAfterSeconds: NOW / 1000 + 1 }),
      {
        codeName: 'InvalidOptions',
        message:
          "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number",
        field: 'expireAfterSeconds',
      },
    ],
    [
      'expireAfterSeconds not a number',
      () => create({ timeField: 't' }, { expireAfterSeconds: '' }),
      {
        codeName: 'TypeMismatch',
        message:
          "BSON field 'create.expireAfterSeconds' is the wrong type 'string', expected types '[long, int, decimal, double']",
        field: 'expireAfterSeconds',
      },
    ],
    [
      'capped with size',
      () => create({ timeField: 't' }, { capped: true, size: 100 }),
      {
        codeName: 'InvalidOptions',
        message: "db.weather: 'timeseries' is not allowed with 'capped'",
        field: 'capped',
      },
    ],
    [
      'capped with max but no size',
      () => create({ timeField: 't' }, { capped: true, max: 100 }),
      {
        codeName: 'InvalidOptions',
        message: "the 'size' field is required when 'capped' is true",
        field: 'capped',
      },
    ],
    [
      'size without capped',
      () => create({ timeField: 't' }, { size: 100 }),
      {
        codeName: 'InvalidOptions',
        message: "the 'capped' field needs to be true when either the 'size' or 'max' fields are present",
        field: 'size',
      },
    ],
    [
      'capped of the wrong type',
      () => create({ timeField: 't' }, { capped: 'yes' }),
      {
        codeName: 'TypeMismatch',
        message:
          "BSON field 'create.capped' is the wrong type 'string', expected types '[bool, long, int, decimal, double']",
        field: 'capped',
      },
    ],
    ...(
      [
        ['autoIndexId', { autoIndexId: true }],
        ['idIndex', { idIndex: { key: { _id: 1 }, name: '_id_' } }],
        ['validator', { validator: {} }],
        ['validationLevel', { validationLevel: 'off' }],
        ['validationAction', { validationAction: 'warn' }],
        ['viewOn', { viewOn: 'coll' }],
        ['viewOn', { viewOn: 'coll', pipeline: [] }],
        ['clusteredIndex', { clusteredIndex: true }],
        ['clusteredIndex', { clusteredIndex: false }],
      ] as const
    ).map(
      ([key, extra]) =>
        [
          `incompatible option ${JSON.stringify(extra)}`,
          () => create({ timeField: 't' }, extra),
          {
            codeName: 'InvalidOptions',
            message: `db.weather: 'timeseries' is not allowed with '${key}'`,
            field: key,
          },
        ] as const,
    ),
    [
      'pipeline without viewOn',
      () => create({ timeField: 't' }, { pipeline: [] }),
      {
        codeName: 'InvalidOptions',
        message: "'pipeline' requires 'viewOn' to also be specified",
        field: 'pipeline',
      },
    ],
    [
      'temp',
      () => create({ timeField: 't' }, { temp: true }),
      { codeName: 'InvalidOptions', message: "the 'temp' field is an invalid option", field: 'temp' },
    ],
    [
      'collation (accepted by MongoDB, not implemented)',
      () => create({ timeField: 't' }, { collation: { locale: 'ja' } }),
      {
        codeName: 'InvalidOptions',
        message: "db.weather: option 'collation' is not supported by tsbuckets",
        field: 'collation',
      },
    ],
  ];

  it.each(cases)('%s', (_name, fn, expected) => {
    expectError(fn, expected);
  });
});

describe('sameCollectionOptions', () => {
  it("treats granularity 'seconds' as equal to unspecified", () => {
    expect(
      sameCollectionOptions(create({ timeField: 't' }), create({ timeField: 't', granularity: 'seconds' })),
    ).toBe(true);
  });

  it.each([
    ['timeField', { timeField: 'u' }, {}],
    ['metaField', { timeField: 't', metaField: 'm' }, {}],
    ['granularity', { timeField: 't', granularity: 'minutes' }, {}],
    ['custom bucketing', { timeField: 't', bucketMaxSpanSeconds: 3600, bucketRoundingSeconds: 3600 }, {}],
    ['expireAfterSeconds', { timeField: 't' }, { expireAfterSeconds: 5 }],
  ] as const)('differs on %s', (_name, ts, extra) => {
    expect(sameCollectionOptions(create({ timeField: 't' }), create(ts, extra))).toBe(false);
  });
});

describe('areTimeseriesBucketsFixed', () => {
  it('is true for custom bucketing with equal values and false for presets or after a change', () => {
    const custom = create({ timeField: 't', bucketMaxSpanSeconds: 600, bucketRoundingSeconds: 600 });
    expect(areTimeseriesBucketsFixed(custom)).toBe(true);
    expect(areTimeseriesBucketsFixed(create({ timeField: 't' }))).toBe(false);
    const changed = resolveCollMod(custom, { bucketMaxSpanSeconds: 900, bucketRoundingSeconds: 900 }, clock);
    expect(areTimeseriesBucketsFixed(changed)).toBe(false);
  });
});

describe('resolveCollMod', () => {
  type Current = Record<string, unknown>;
  const seconds: Current = { timeField: 't' };
  const minutes: Current = { timeField: 't', granularity: 'minutes' };
  const hours: Current = { timeField: 't', granularity: 'hours' };
  const custom = (n: number): Current => ({
    timeField: 't',
    bucketMaxSpanSeconds: n,
    bucketRoundingSeconds: n,
  });

  // [name, current, mod, expected [granularity, span, rounding] | 'unchanged' | error]
  const transitions: ReadonlyArray<
    readonly [
      string,
      Current,
      Record<string, unknown>,
      readonly [string | undefined, number, number] | 'unchanged',
    ]
  > = [
    ['seconds → minutes', seconds, { granularity: 'minutes' }, ['minutes', 86400, 3600]],
    ['seconds → hours', seconds, { granularity: 'hours' }, ['hours', 2592000, 86400]],
    ['minutes → hours', minutes, { granularity: 'hours' }, ['hours', 2592000, 86400]],
    [
      'minutes → hours with preset span',
      minutes,
      { granularity: 'hours', bucketMaxSpanSeconds: 2592000 },
      ['hours', 2592000, 86400],
    ],
    ['seconds → seconds', seconds, { granularity: 'seconds' }, 'unchanged'],
    ['empty mod', seconds, {}, 'unchanged'],
    [
      'seconds preset → custom 3600',
      seconds,
      { bucketMaxSpanSeconds: 3600, bucketRoundingSeconds: 3600 },
      [undefined, 3600, 3600],
    ],
    ['custom 60 → granularity seconds', custom(60), { granularity: 'seconds' }, ['seconds', 3600, 60]],
    [
      'custom 100 → custom 100',
      custom(100),
      { bucketMaxSpanSeconds: 100, bucketRoundingSeconds: 100 },
      'unchanged',
    ],
    [
      'custom 100 → custom 200',
      custom(100),
      { bucketMaxSpanSeconds: 200, bucketRoundingSeconds: 200 },
      [undefined, 200, 200],
    ],
    [
      'hours → custom 2592000',
      hours,
      { bucketMaxSpanSeconds: 2592000, bucketRoundingSeconds: 2592000 },
      [undefined, 2592000, 2592000],
    ],
  ];

  it.each(transitions)('%s', (_name, current, mod, expected) => {
    // Arrange
    const before = create(current);
    // Act
    const after = resolveCollMod(before, mod, clock);
    // Assert
    if (expected === 'unchanged') {
      expect(after).toBe(before);
      return;
    }
    expect([after.granularity, after.bucketMaxSpanSeconds, after.bucketRoundingSeconds]).toEqual(expected);
    expect(after.bucketingParametersHaveChanged).toBe(true);
    expect(Object.isFrozen(after) && Object.isFrozen(after.storedOptions.timeseries)).toBe(true);
    expect(after.storedOptions.timeseries).toEqual(
      expected[0] === undefined
        ? { timeField: 't', bucketRoundingSeconds: expected[2], bucketMaxSpanSeconds: expected[1] }
        : { timeField: 't', granularity: expected[0], bucketMaxSpanSeconds: expected[1] },
    );
  });

  const invalidTransition =
    "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.";
  const spanDecrease = "Timeseries 'bucketMaxSpanSeconds' needs to be equal or greater to transition";
  const roundingDecrease = "Timeseries 'bucketRoundingSeconds' needs to be equal or greater to transition";

  const refusals: ReadonlyArray<readonly [string, Current, unknown, ExpectedError]> = [
    [
      'minutes → seconds',
      minutes,
      { granularity: 'seconds' },
      { codeName: 'InvalidOptions', message: invalidTransition, field: 'granularity' },
    ],
    [
      'hours → minutes',
      hours,
      { granularity: 'minutes' },
      { codeName: 'InvalidOptions', message: invalidTransition, field: 'granularity' },
    ],
    [
      'hours → seconds',
      hours,
      { granularity: 'seconds' },
      { codeName: 'InvalidOptions', message: invalidTransition, field: 'granularity' },
    ],
    [
      'granularity with a non-preset span',
      seconds,
      { granularity: 'minutes', bucketMaxSpanSeconds: 3600 },
      {
        codeName: 'InvalidOptions',
        message:
          "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default for the provided granularity",
        field: 'bucketMaxSpanSeconds',
      },
    ],
    [
      'granularity with rounding',
      seconds,
      { granularity: 'minutes', bucketRoundingSeconds: 3600 },
      {
        codeName: 'InvalidOptions',
        message: "Timeseries 'bucketRoundingSeconds' is not configurable alongside the granularity parameter",
        field: 'bucketRoundingSeconds',
      },
    ],
    [
      'only bucketMaxSpanSeconds',
      seconds,
      { bucketMaxSpanSeconds: 7200 },
      {
        codeName: 'InvalidOptions',
        message:
          "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
        field: 'bucketRoundingSeconds',
      },
    ],
    [
      'only bucketRoundingSeconds',
      seconds,
      { bucketRoundingSeconds: 7200 },
      {
        codeName: 'InvalidOptions',
        message:
          "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
        field: 'bucketMaxSpanSeconds',
      },
    ],
    [
      'unequal seconds values',
      seconds,
      { bucketMaxSpanSeconds: 7200, bucketRoundingSeconds: 3600 },
      {
        codeName: 'InvalidOptions',
        message: "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'",
        field: 'bucketRoundingSeconds',
      },
    ],
    [
      'seconds preset → custom 1800 (span shrinks)',
      seconds,
      { bucketMaxSpanSeconds: 1800, bucketRoundingSeconds: 1800 },
      { codeName: 'InvalidOptions', message: spanDecrease, field: 'bucketMaxSpanSeconds' },
    ],
    [
      'custom 7200 → custom 3600',
      custom(7200),
      { bucketMaxSpanSeconds: 3600, bucketRoundingSeconds: 3600 },
      { codeName: 'InvalidOptions', message: spanDecrease, field: 'bucketMaxSpanSeconds' },
    ],
    [
      'custom 3600 → seconds (rounding shrinks)',
      custom(3600),
      { granularity: 'seconds' },
      { codeName: 'InvalidOptions', message: roundingDecrease, field: 'bucketRoundingSeconds' },
    ],
    [
      'custom 4000 → minutes (rounding shrinks)',
      custom(4000),
      { granularity: 'minutes' },
      { codeName: 'InvalidOptions', message: roundingDecrease, field: 'bucketRoundingSeconds' },
    ],
    [
      'unknown option',
      seconds,
      { foo: 1 },
      { codeName: 'IDLUnknownField', message: "BSON field 'collMod.foo' is an unknown field.", field: 'foo' },
    ],
    [
      'own __proto__ key',
      seconds,
      JSON.parse('{"__proto__":{"granularity":"hours"}}') as unknown,
      {
        codeName: 'IDLUnknownField',
        message: "BSON field 'collMod.__proto__' is an unknown field.",
        field: '__proto__',
      },
    ],
    [
      'granularity not in the enum',
      seconds,
      { granularity: 'days' },
      {
        codeName: 'BadValue',
        message: "Enumeration value 'days' for field 'collMod.timeseries.granularity' is not a valid value.",
        field: 'granularity',
      },
    ],
    [
      'seconds out of range',
      seconds,
      { bucketMaxSpanSeconds: 0, bucketRoundingSeconds: 0 },
      {
        codeName: 'BadValue',
        message: "BSON field 'collMod.timeseries.bucketMaxSpanSeconds' value must be >= 1, actual value '0'",
        field: 'bucketMaxSpanSeconds',
      },
    ],
    [
      "expireAfterSeconds string other than 'off'",
      seconds,
      { expireAfterSeconds: 'on' },
      {
        codeName: 'InvalidOptions',
        message:
          "Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. Got: 'on'. Accepted value is 'off'",
        field: 'expireAfterSeconds',
      },
    ],
    [
      'negative expireAfterSeconds',
      seconds,
      { expireAfterSeconds: -1 },
      {
        codeName: 'InvalidOptions',
        message: "TTL index 'expireAfterSeconds' option cannot be less than 0",
        field: 'expireAfterSeconds',
      },
    ],
    [
      'expireAfterSeconds of the wrong type',
      seconds,
      { expireAfterSeconds: true },
      {
        codeName: 'TypeMismatch',
        message:
          "BSON field 'collMod.expireAfterSeconds' is the wrong type 'bool', expected types '[string, long, int, decimal, double']",
        field: 'expireAfterSeconds',
      },
    ],
    [
      'mod not an object',
      seconds,
      5,
      {
        codeName: 'TypeMismatch',
        message: "collMod options must be an object, but got type 'int'",
        field: 'options',
      },
    ],
  ];

  it.each(refusals)('refuses %s', (_name, current, mod, expected) => {
    const before = create(current);
    expectError(() => resolveCollMod(before, mod, clock), expected);
  });

  it("sets, changes and removes expireAfterSeconds ('off') without touching bucketing", () => {
    const base = create({ timeField: 't' });
    const withTtl = resolveCollMod(base, { expireAfterSeconds: 60 }, clock);
    expect([withTtl.expireAfterSeconds, withTtl.storedOptions.expireAfterSeconds]).toEqual([60, 60]);
    expect(withTtl.bucketingParametersHaveChanged).toBe(false);
    const off = resolveCollMod(withTtl, { expireAfterSeconds: 'off' }, clock);
    expect(off.expireAfterSeconds).toBeUndefined();
    expect('expireAfterSeconds' in off.storedOptions).toBe(false);
  });

  it('keeps bucketingParametersHaveChanged once set', () => {
    const changed = resolveCollMod(create({ timeField: 't' }), { granularity: 'minutes' }, clock);
    expect(resolveCollMod(changed, { expireAfterSeconds: 5 }, clock).bucketingParametersHaveChanged).toBe(
      true,
    );
  });

  it('returns the current options for a null or undefined mod', () => {
    const base = create({ timeField: 't' });
    expect(resolveCollMod(base, null, clock)).toBe(base);
    expect(resolveCollMod(base, undefined, clock)).toBe(base);
  });
});

describe('resolveServerParameters', () => {
  const GiB16 = 16 * 1024 ** 3;
  const mib16 = 16 * 1024;

  it('applies MongoDB defaults; the memory threshold defaults to 5% of total memory', () => {
    const p = resolveServerParameters(undefined, GiB16);
    expect(p).toEqual({
      timeseriesBucketMaxCount: 1000,
      timeseriesBucketMaxSize: 128000,
      timeseriesBucketMinCount: 10,
      timeseriesIdleBucketExpiryMemoryUsageThreshold: -1,
      timeseriesIdleBucketExpiryMemoryUsageThresholdBytes: mib16 * 5 * 10485,
      timeseriesIdleBucketExpiryMaxCountPerAttempt: 3,
      timeseriesValidateCompressedBuckets: true,
      timeseriesAlwaysUseCompressedBuckets: true,
    });
    expect(Object.isFrozen(p)).toBe(true);
    expect(resolveServerParameters({ timeseriesValidateCompressedBuckets: false }, GiB16)).toMatchObject({
      timeseriesValidateCompressedBuckets: false,
    });
    expect(resolveServerParameters({ timeseriesAlwaysUseCompressedBuckets: false }, GiB16)).toMatchObject({
      timeseriesAlwaysUseCompressedBuckets: false,
    });
    expect(() => resolveServerParameters({ timeseriesAlwaysUseCompressedBuckets: 1 }, GiB16)).toThrow(
      "Invalid value for parameter timeseriesAlwaysUseCompressedBuckets: expected a boolean, got type 'int'",
    );
  });

  it.each([
    [-5, mib16 * 5 * 10485],
    [0, mib16 * 5 * 10485],
    [1, mib16 * 1 * 10485],
    [10, mib16 * 10 * 10485],
    [100, mib16 * 100 * 10485],
    [101, 101],
    [1_000_000_000, 1_000_000_000],
  ])('memory threshold %i → %i bytes (<= 0: 5%%, 1..100: percent, > 100: bytes)', (threshold, bytes) => {
    const p = resolveServerParameters({ timeseriesIdleBucketExpiryMemoryUsageThreshold: threshold }, GiB16);
    expect(p.timeseriesIdleBucketExpiryMemoryUsageThresholdBytes).toBe(bytes);
  });

  it('uses os.totalmem() when no total memory is injected', () => {
    const p = resolveServerParameters({});
    expect(p.timeseriesIdleBucketExpiryMemoryUsageThresholdBytes).toBe(
      Math.floor(totalmem() / 1024 ** 2) * 5 * 10485,
    );
  });

  it('accepts values at their minimum and js-bson numbers', () => {
    const p = resolveServerParameters(
      {
        timeseriesBucketMaxCount: 1,
        timeseriesBucketMaxSize: new Int32(1),
        timeseriesBucketMinCount: Long.fromNumber(1),
        timeseriesIdleBucketExpiryMaxCountPerAttempt: 2,
      },
      GiB16,
    );
    expect([
      p.timeseriesBucketMaxCount,
      p.timeseriesBucketMaxSize,
      p.timeseriesBucketMinCount,
      p.timeseriesIdleBucketExpiryMaxCountPerAttempt,
    ]).toEqual([1, 1, 1, 2]);
  });

  const refusals: ReadonlyArray<readonly [string, unknown, ExpectedError]> = [
    ...(
      [
        ['timeseriesBucketMaxCount', 0, 1],
        ['timeseriesBucketMaxSize', 0, 1],
        ['timeseriesBucketMinCount', 0, 1],
        ['timeseriesIdleBucketExpiryMaxCountPerAttempt', 1, 2],
      ] as const
    ).map(
      ([name, value, min]) =>
        [
          `${name} below ${min}`,
          { [name]: value },
          {
            codeName: 'BadValue',
            message: `Invalid value for parameter ${name}: ${value} is not greater than or equal to ${min}`,
            field: name,
          },
        ] as const,
    ),
    [
      'a non-number',
      { timeseriesBucketMaxCount: '10' },
      {
        codeName: 'TypeMismatch',
        message: "Invalid value for parameter timeseriesBucketMaxCount: expected a number, got type 'string'",
        field: 'timeseriesBucketMaxCount',
      },
    ],
    [
      'a non-boolean for timeseriesValidateCompressedBuckets',
      { timeseriesValidateCompressedBuckets: 1 },
      {
        codeName: 'TypeMismatch',
        message:
          "Invalid value for parameter timeseriesValidateCompressedBuckets: expected a boolean, got type 'int'",
        field: 'timeseriesValidateCompressedBuckets',
      },
    ],
    [
      'NaN',
      { timeseriesBucketMaxSize: Number.NaN },
      {
        codeName: 'BadValue',
        message: 'Invalid value for parameter timeseriesBucketMaxSize: NaN is not a finite number',
        field: 'timeseriesBucketMaxSize',
      },
    ],
    [
      'an unknown parameter',
      { timeseriesBucketMaxCountt: 5 },
      {
        codeName: 'InvalidOptions',
        message:
          'attempted to set unrecognized parameter [timeseriesBucketMaxCountt], use help:true to see options',
        field: 'timeseriesBucketMaxCountt',
      },
    ],
    [
      'an own __proto__ key',
      JSON.parse('{"__proto__":{"timeseriesBucketMaxCount":1}}') as unknown,
      {
        codeName: 'InvalidOptions',
        message: 'attempted to set unrecognized parameter [__proto__], use help:true to see options',
        field: '__proto__',
      },
    ],
    [
      'parameters not an object',
      [],
      {
        codeName: 'TypeMismatch',
        message: "Server parameters must be an object, but got type 'array'",
        field: 'parameters',
      },
    ],
  ];

  it.each(refusals)('refuses %s', (_name, params, expected) => {
    expectError(() => resolveServerParameters(params, GiB16), expected);
  });
});
