/**
 * Hostile measurements and the law they must obey, shared by the property test (CI size) and the fuzz
 * script (`npm run fuzz`, 10 000 cases).
 *
 * Each generated value carries whether BSON can hold it (`valid`), decided by construction: invalid
 * leaves (functions, symbols, Map/Set, class instances, forged `_bsontype` or `Symbol.toStringTag`, BigInt outside int64, Invalid
 * Date, NUL in a name or regex, circular values, nesting past 180 levels) make every container holding
 * them invalid. The law: each measurement is either refused with a TimeseriesError (`BadValue`,
 * `Overflow`) exactly when it is invalid, or stored and read back as the same BSON; in both ordered
 * modes; and nothing else is lost (an ordered call stops at its first invalid measurement, an unordered
 * call stores every valid one).
 */
import { Buffer } from 'node:buffer';

import { Decimal128, Double, Int32, Long, ObjectId, serialize } from 'bson';
import fc from 'fast-check';

import { BucketEngine, BulkWriteError } from '../../src/index.js';

/**
 * A generated value, whether BSON can hold its contents, and how many levels of documents and arrays it
 * nests (0 for a scalar): a measurement holding it is valid only within 180 levels.
 */
export interface Hostile {
  readonly value: unknown;
  readonly valid: boolean;
  readonly depth: number;
}

/** One generated call: measurements (with their validity) and the mode. */
export interface HostileCall {
  readonly measurements: ReadonlyArray<{
    readonly fields: ReadonlyArray<readonly [name: Hostile, value: Hostile]>;
    readonly meta: Hostile;
  }>;
  readonly ordered: boolean;
}

const valid = (value: unknown): Hostile => ({ value, valid: true, depth: 0 });
const invalid = (value: unknown): Hostile => ({ value, valid: false, depth: 0 });
const kMaxFieldDepth = 179;

function nestedObjects(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { d: value };
  return value;
}

const validLeaf: fc.Arbitrary<Hostile> = fc
  .oneof(
    fc.double(),
    fc.integer(),
    fc.constant(-0),
    fc.string({ maxLength: 4 }),
    fc.string({ unit: 'binary', maxLength: 4 }),
    fc.constantFrom('\uD800', 'a\uDC00', '\0', '\uFEFF', '\uFEFFlong enough to skip the ASCII path'),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    fc.date({ noInvalidDate: true }),
    fc.constantFrom(/a/g, /x+y/im, /b/su, /c/),
    fc.uint8Array({ maxLength: 4 }),
    fc.integer().map((n) => new Int32(n)),
    fc.double().map((n) => new Double(n)),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Long.fromBigInt(n)),
    fc.constantFrom('1.5', '-0', 'NaN', '1E+10').map((s) => Decimal128.fromString(s)),
    fc.uint8Array({ minLength: 12, maxLength: 12 }).map((b) => new ObjectId(b)),
  )
  .map(valid);

/** Nested to exactly the limit inside a measurement (the measurement is level 1, the field level 2). */
const deepestValid: fc.Arbitrary<Hostile> = fc.constant({
  value: nestedObjects(kMaxFieldDepth),
  valid: true,
  depth: kMaxFieldDepth,
});

class Point {
  readonly x = 1;
}

const invalidLeaf: fc.Arbitrary<Hostile> = fc
  .oneof(
    fc.bigInt({ min: 2n ** 63n, max: 2n ** 70n }),
    fc.bigInt({ min: -(2n ** 70n), max: -(2n ** 63n) - 1n }),
    fc.constant(new Date(Number.NaN)),
    fc.constant(() => 1),
    fc.constant(Symbol('s')),
    fc.constant(new Map([['a', 1]])),
    fc.constant(new Set([1])),
    fc.constant(new Point()),
    fc.constant(new Float64Array(1)),
    fc.constantFrom('Int32', 'ObjectId', 'Nope').map((tag) => ({ _bsontype: tag, value: 1 })),
    // What js-bson takes for a date, a regex or bytes by its tag.
    fc.constantFrom('Date', 'RegExp', 'Uint8Array').map((tag) => ({ [Symbol.toStringTag]: tag, a: 1 })),
    fc.constant(new RegExp(String.fromCharCode(97, 0))),
    fc.constant(nestedObjects(180)),
    fc.constant(null).map(() => {
      const circular: Record<string, unknown> = { a: 1 };
      circular.self = circular;
      return circular;
    }),
  )
  .map(invalid);

/** Field names: hostile but valid, or with NUL (invalid). Never the time field or the metaField. */
const fieldName: fc.Arbitrary<Hostile> = fc.oneof(
  fc
    .oneof(
      fc.constantFrom(
        '__proto__',
        'constructor',
        'prototype',
        'toString',
        '$x',
        'a.b',
        '_id',
        'é',
        '\uD800',
        '\uFEFF',
      ),
      fc.string({ minLength: 1, maxLength: 3 }),
    )
    .filter((name) => name !== 't' && name !== 'm' && !name.includes('\0'))
    .map(valid),
  fc.constantFrom('a\0b', '\0').map(invalid),
);

function defineOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** Hostile values, nested a few levels, each knowing whether BSON can hold it. */
export const hostileValue: fc.Arbitrary<Hostile> = fc.letrec<{ value: Hostile }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { arbitrary: validLeaf, weight: 6 },
    { arbitrary: deepestValid, weight: 1 },
    { arbitrary: invalidLeaf, weight: 1 },
    {
      arbitrary: fc.array(tie('value'), { maxLength: 3 }).map((items) => ({
        value: items.map((i) => i.value),
        valid: items.every((i) => i.valid),
        depth: 1 + Math.max(0, ...items.map((i) => i.depth)),
      })),
      weight: 1,
    },
    {
      arbitrary: fc
        .uniqueArray(fc.tuple(fieldName, tie('value')), { maxLength: 3, selector: ([name]) => name.value })
        .map((entries) => {
          const doc: Record<string, unknown> = {};
          for (const [name, v] of entries) defineOwn(doc, name.value as string, v.value);
          return {
            value: doc,
            valid: entries.every(([name, v]) => name.valid && v.valid),
            depth: 1 + Math.max(0, ...entries.map(([, v]) => v.depth)),
          };
        }),
      weight: 1,
    },
  ),
})).value;

/** A call of 1 to 6 measurements with hostile fields and metas. */
export const hostileCall: fc.Arbitrary<HostileCall> = fc.record({
  measurements: fc.array(
    fc.record({
      fields: fc.uniqueArray(fc.tuple(fieldName, hostileValue), {
        maxLength: 4,
        selector: ([name]) => name.value,
      }),
      meta: hostileValue,
    }),
    { minLength: 1, maxLength: 6 },
  ),
  ordered: fc.boolean(),
});

const t0 = Date.UTC(2024, 0, 1);

function measurementOf(call: HostileCall, i: number): Record<string, unknown> {
  const spec = call.measurements[i];
  if (spec === undefined) throw new Error(`no measurement ${i}`);
  const doc: Record<string, unknown> = {};
  defineOwn(doc, 't', new Date(t0 + i * 1000));
  defineOwn(doc, 'm', spec.meta.value);
  for (const [name, value] of spec.fields) defineOwn(doc, name.value as string, value.value);
  return doc;
}

/** A name as BSON writes it: a lone surrogate becomes U+FFFD. */
function bsonName(name: string): string {
  return Buffer.from(name, 'utf8').toString('utf8');
}

function isValid(call: HostileCall, i: number): boolean {
  const spec = call.measurements[i];
  if (spec === undefined) return false;
  // Names that BSON writes alike would be one field.
  const names = new Set(spec.fields.map(([name]) => bsonName(name.value as string)));
  return (
    names.size === spec.fields.length &&
    !names.has('t') &&
    !names.has('m') &&
    spec.meta.valid &&
    spec.meta.depth <= kMaxFieldDepth &&
    spec.fields.every(([name, v]) => name.valid && v.valid && v.depth <= kMaxFieldDepth)
  );
}

/** The BSON bytes of one value, as the `mongodb` driver would send it (`ignoreUndefined: false`). */
function bytesOf(value: unknown): string {
  const holder: Record<string, unknown> = {};
  defineOwn(holder, 'v', value === undefined ? null : value);
  return Buffer.from(serialize(holder, { ignoreUndefined: false })).toString('hex');
}

/** A meta as MongoDB stores it: object fields sorted by the bytes of their names, at every depth. */
function normalized(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v: unknown) => normalized(v ?? null));
  if (typeof value !== 'object' || value === null) return value;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const names = Object.keys(value).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const out: Record<string, unknown> = {};
  for (const name of names) {
    const v = (value as Record<string, unknown>)[name];
    // A field whose value is undefined is sent as null by the driver.
    defineOwn(out, name, normalized(v === undefined ? null : v));
  }
  return out;
}

/**
 * Run one call on a fresh engine and check the law; throws (an assertion failure) when it is broken.
 *
 * @param call - the generated call.
 * @param bucketMaxCount - small values close (and compress) buckets during the call.
 */
export async function checkHostileCall(call: HostileCall, bucketMaxCount: number): Promise<void> {
  const engine = new BucketEngine({ parameters: { timeseriesBucketMaxCount: bucketMaxCount } });
  try {
    const coll = await engine.createCollection('c', { timeseries: { timeField: 't', metaField: 'm' } });
    const n = call.measurements.length;
    const docs = Array.from({ length: n }, (_, i) => measurementOf(call, i));
    // Act
    const reported = new Map<number, string>();
    try {
      await coll.insertMany(docs, { ordered: call.ordered });
    } catch (error) {
      if (!BulkWriteError.isTsBucketsError(error) || !(error instanceof BulkWriteError)) throw error;
      for (const w of error.writeErrors) reported.set(w.index, w.codeName);
    }
    // Assert: refused exactly when invalid (up to the first failure when ordered), with a typed code.
    const firstInvalid = Array.from({ length: n }, (_, i) => i).find((i) => !isValid(call, i)) ?? n;
    const expectedStored: number[] = [];
    for (let i = 0; i < n; i++) {
      const shouldFail = !isValid(call, i) && (!call.ordered || i === firstInvalid);
      const attempted = !call.ordered || i <= firstInvalid;
      const code = reported.get(i);
      if (shouldFail) {
        if (code !== 'BadValue' && code !== 'Overflow') {
          throw new Error(
            `measurement ${i} should be refused with BadValue or Overflow, got ${String(code)}`,
          );
        }
      } else if (code !== undefined) {
        throw new Error(`measurement ${i} is valid but was refused with ${code}`);
      }
      if (attempted && isValid(call, i)) expectedStored.push(i);
    }
    // Assert: what was stored reads back as the same BSON, and nothing else is there.
    const rows = await coll.find({}, { sort: { t: 1 } }).toArray();
    const storedIndices = rows.map((row) => ((row.t as Date).getTime() - t0) / 1000);
    if (JSON.stringify(storedIndices) !== JSON.stringify(expectedStored)) {
      throw new Error(`stored ${JSON.stringify(storedIndices)}, expected ${JSON.stringify(expectedStored)}`);
    }
    for (const row of rows) {
      const i = storedIndices[rows.indexOf(row)] as number;
      const doc = measurementOf(call, i);
      const readNames = Object.keys(row).sort();
      const sentNames = Object.keys(doc).sort();
      const sentBsonNames = sentNames.map(bsonName).sort();
      if (JSON.stringify(readNames) !== JSON.stringify(sentBsonNames)) {
        throw new Error(
          `measurement ${i}: fields ${JSON.stringify(readNames)}, sent ${JSON.stringify(sentNames)}`,
        );
      }
      if (Object.getPrototypeOf(row) !== Object.prototype)
        throw new Error(`measurement ${i}: prototype changed`);
      for (const name of sentNames) {
        const sent = name === 'm' ? normalized(doc[name]) : doc[name];
        const read = Object.getOwnPropertyDescriptor(row, bsonName(name))?.value as unknown;
        if (bytesOf(read) !== bytesOf(sent)) {
          throw new Error(`measurement ${i}: field ${JSON.stringify(name)} reads back as different BSON`);
        }
      }
    }
    // Assert: the collection still takes measurements.
    await coll.insertOne({ t: new Date(t0 - 1000), m: 'after', v: 1 });
    if ((await coll.countDocuments()) !== expectedStored.length + 1)
      throw new Error('a later insert was lost');
  } finally {
    await engine.close();
  }
}
