import { describe, expect, it } from 'vitest';

import { BucketEngine, MemoryStorage, TimeseriesError } from '../../../src/index.js';
import { resolveEngineOptions } from '../../../src/engine/engine-options.js';

function errorOf(fn: () => unknown): TimeseriesError {
  try {
    fn();
  } catch (error) {
    if (TimeseriesError.isTimeseriesError(error)) return error;
    throw error;
  }
  throw new Error('expected a TimeseriesError');
}

describe('resolveEngineOptions', () => {
  it('resolves defaults into a frozen config', () => {
    const resolved = resolveEngineOptions();
    expect(Object.isFrozen(resolved)).toBe(true);
    expect(resolved.storage).toBeInstanceOf(MemoryStorage);
    expect({ ...resolved, storage: undefined, clock: undefined, parameters: undefined }).toStrictEqual({
      storage: undefined,
      parameters: undefined,
      clock: undefined,
      dbName: 'tsbuckets',
      compression: 'onClose',
      reopening: 'enabled',
      ttlMonitor: 'enabled',
      ttlMonitorSleepSecs: 60,
    });
    expect(resolved.parameters.timeseriesBucketMaxCount).toBe(1000);
  });

  it('keeps given values and treats undefined as absent', () => {
    const storage = new MemoryStorage();
    const clock = (): number => 42;
    const resolved = resolveEngineOptions({
      storage,
      clock,
      dbName: 'metrics',
      compression: 'none',
      reopening: 'disabled',
      ttlMonitor: 'disabled',
      ttlMonitorSleepSecs: 0.5,
      parameters: { timeseriesBucketMaxCount: 7 },
    });
    expect(resolved.storage).toBe(storage);
    expect(resolved.clock).toBe(clock);
    expect([resolved.dbName, resolved.compression, resolved.reopening, resolved.ttlMonitor]).toEqual([
      'metrics',
      'none',
      'disabled',
      'disabled',
    ]);
    expect(resolved.ttlMonitorSleepSecs).toBe(0.5);
    expect(resolved.parameters.timeseriesBucketMaxCount).toBe(7);
    expect(resolveEngineOptions({ dbName: undefined }).dbName).toBe('tsbuckets');
  });

  it('refuses unknown options as MongoDB refuses unknown command fields (IDLUnknownField 40415)', () => {
    // A misspelt option must not be silently ignored.
    const error = errorOf(() => new BucketEngine({ ttlMonitorSleepSeconds: 5 } as never));
    expect([error.code, error.codeName, error.message, error.field]).toEqual([
      40415,
      'IDLUnknownField',
      "BSON field 'BucketEngineOptions.ttlMonitorSleepSeconds' is an unknown field.",
      'ttlMonitorSleepSeconds',
    ]);
    // Inherited and hostile names are unknown too; nothing is read from the prototype.
    expect(errorOf(() => resolveEngineOptions(JSON.parse('{"__proto__": {"dbName": "x"}}'))).field).toBe(
      '__proto__',
    );
    expect(resolveEngineOptions(Object.create({ dbName: 'inherited' }) as object).dbName).toBe('tsbuckets');
  });

  it('refuses values of the wrong type, outside an enumeration or out of range', () => {
    const cases: Array<[unknown, string, string]> = [
      [
        { compression: 'always' },
        'BadValue',
        "Enumeration value 'always' for field 'BucketEngineOptions.compression' is not a valid value.",
      ],
      [
        { reopening: true },
        'TypeMismatch',
        "BSON field 'BucketEngineOptions.reopening' is the wrong type 'boolean', expected type 'string'",
      ],
      [
        { clock: 5 },
        'TypeMismatch',
        "BSON field 'BucketEngineOptions.clock' is the wrong type 'number', expected type 'function'",
      ],
      [
        { storage: null },
        'TypeMismatch',
        "BSON field 'BucketEngineOptions.storage' is the wrong type 'null', expected type 'object'",
      ],
      [
        { dbName: 7 },
        'TypeMismatch',
        "BSON field 'BucketEngineOptions.dbName' is the wrong type 'number', expected type 'string'",
      ],
      [{ dbName: '' }, 'BadValue', 'Invalid database name: the empty string'],
      [
        { ttlMonitorSleepSecs: -1 },
        'BadValue',
        'Invalid value for ttlMonitorSleepSecs: -1 is not a positive number',
      ],
      [
        { ttlMonitorSleepSecs: Number.POSITIVE_INFINITY },
        'BadValue',
        'Invalid value for ttlMonitorSleepSecs: Infinity is not a positive number',
      ],
      [
        { parameters: { timeseriesBucketMaxCnt: 1 } },
        'InvalidOptions',
        'attempted to set unrecognized parameter [timeseriesBucketMaxCnt], use help:true to see options',
      ],
      ['fast', 'TypeMismatch', "BucketEngine options must be an object, but got type 'string'"],
    ];
    for (const [options, codeName, message] of cases) {
      const error = errorOf(() => resolveEngineOptions(options));
      expect([error.codeName, error.message]).toEqual([codeName, message]);
    }
  });
});
