/**
 * `BucketEngine` options, resolved once into a frozen config (STYLE rule 6).
 *
 * JavaScript callers pass anything, and a misspelt option (`ttlMonitorSleepSeconds`) would otherwise be
 * ignored without a word. Unknown options are refused the way MongoDB's IDL parser refuses an unknown
 * command field (`IDLUnknownField`, 40415), with the same message shape as `createCollection`'s
 * (`BSON field 'BucketEngineOptions.<name>' is an unknown field.`); wrong types are `TypeMismatch`, bad
 * enumeration values and ranges `BadValue`.
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';
import { resolveServerParameters } from '../options.js';
import type { ResolvedServerParameters, ServerParameters } from '../options.js';
import { MemoryStorage } from '../storage/memory-storage.js';
import type { Storage } from '../storage/storage.js';
import { systemClock } from '../util/clock.js';
import type { Clock } from '../util/clock.js';

/** Options of `BucketEngine`. Every option is optional (`undefined` is absent); unknown names are refused. */
export interface BucketEngineOptions {
  /**
   * Where bucket documents are stored.
   *
   * @defaultValue `new MemoryStorage()`
   */
  readonly storage?: Storage | undefined;
  /**
   * MongoDB server parameters (names, defaults and ranges as MongoDB's).
   *
   * @defaultValue MongoDB's defaults (`DEFAULT_SERVER_PARAMETERS`)
   */
  readonly parameters?: ServerParameters | undefined;
  /**
   * Current time in epoch milliseconds (TTL and idle expiry).
   *
   * @defaultValue `Date.now`
   */
  readonly clock?: Clock | undefined;
  /**
   * Database name used in namespaces (`<dbName>.<collection>`). A non-empty string.
   *
   * @defaultValue `'tsbuckets'`
   */
  readonly dbName?: string | undefined;
  /**
   * `'onClose'`: when a bucket closes, its document is rewritten compressed (version 2, BSONColumn), as
   * MongoDB 5.2+ does; `'none'`: buckets stay version 1.
   *
   * @defaultValue `'onClose'`
   */
  readonly compression?: 'onClose' | 'none' | undefined;
  /**
   * `'enabled'`: late measurements reopen buckets from storage (MongoDB 6.3+); `'disabled'`: always open
   * new buckets.
   *
   * @defaultValue `'enabled'`
   */
  readonly reopening?: 'enabled' | 'disabled' | undefined;
  /**
   * `'enabled'`: a background TTL monitor runs `engine.runTTLMonitor()` every `ttlMonitorSleepSecs` (its
   * timer never keeps the process alive; `close()` stops it); `'disabled'`: expired buckets are deleted
   * only by explicit `runTTLMonitor()` calls.
   *
   * @defaultValue `'enabled'`
   */
  readonly ttlMonitor?: 'enabled' | 'disabled' | undefined;
  /**
   * Seconds between background TTL passes (MongoDB's `ttlMonitorSleepSecs`); a positive number.
   *
   * @defaultValue 60
   */
  readonly ttlMonitorSleepSecs?: number | undefined;
}

/** Validated, frozen engine options. Built only by {@link resolveEngineOptions}. */
export interface ResolvedEngineOptions {
  /** The storage (a new `MemoryStorage` when none was given). */
  readonly storage: Storage;
  /** The resolved server parameters. */
  readonly parameters: ResolvedServerParameters;
  /** The clock. */
  readonly clock: Clock;
  /** The database name. */
  readonly dbName: string;
  /** Compression of closed buckets. */
  readonly compression: 'onClose' | 'none';
  /** Reopening of buckets from storage. */
  readonly reopening: 'enabled' | 'disabled';
  /** The background TTL monitor. */
  readonly ttlMonitor: 'enabled' | 'disabled';
  /** Seconds between background TTL passes. */
  readonly ttlMonitorSleepSecs: number;
}

type OptionName = keyof BucketEngineOptions;

/** What each option accepts; the keys are the accepted names (anything else is an unknown field). */
const OPTION_KINDS: Readonly<
  Record<OptionName, 'object' | 'function' | 'string' | 'number' | 'serverParameters' | readonly string[]>
> = {
  storage: 'object',
  // Checked by resolveServerParameters, with MongoDB's setParameter messages.
  parameters: 'serverParameters',
  clock: 'function',
  dbName: 'string',
  compression: ['onClose', 'none'],
  reopening: ['enabled', 'disabled'],
  ttlMonitor: ['enabled', 'disabled'],
  ttlMonitorSleepSecs: 'number',
};

function isOptionName(name: string): name is OptionName {
  return Object.prototype.hasOwnProperty.call(OPTION_KINDS, name);
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function check(name: OptionName, value: unknown): void {
  const path = `BucketEngineOptions.${name}`;
  const kind = OPTION_KINDS[name];
  if (typeof kind !== 'string') {
    if (typeof value !== 'string') {
      throw new TimeseriesError(
        'TypeMismatch',
        `BSON field '${path}' is the wrong type '${typeName(value)}', expected type 'string'`,
        { field: name },
      );
    }
    if (!kind.includes(value)) {
      throw new TimeseriesError(
        'BadValue',
        `Enumeration value '${value}' for field '${path}' is not a valid value.`,
        {
          field: name,
        },
      );
    }
    return;
  }
  if (kind !== 'serverParameters' && typeName(value) !== kind) {
    throw new TimeseriesError(
      'TypeMismatch',
      `BSON field '${path}' is the wrong type '${typeName(value)}', expected type '${kind}'`,
      { field: name },
    );
  }
}

/**
 * Validate `BucketEngine` options and resolve them, with defaults, into a frozen config.
 *
 * An option whose value is `undefined` counts as absent. `parameters` are checked by
 * `resolveServerParameters` (unknown parameter → `InvalidOptions`, MongoDB's `setParameter` rule).
 *
 * @example
 * ```ts
 * resolveEngineOptions({ ttlMonitorSleepSecs: 5 }).ttlMonitorSleepSecs; // 5
 * resolveEngineOptions({ ttlMonitorSleepSeconds: 5 }); // throws IDLUnknownField
 * ```
 *
 * @param options - untrusted options (`BucketEngineOptions` shape expected); `undefined` = defaults.
 * @returns the frozen resolved options.
 * @throws {@link TimeseriesError} `IDLUnknownField` for an unknown option, `TypeMismatch` for a value of
 *   the wrong type, `BadValue` for a value outside an enumeration, an empty `dbName` or a
 *   `ttlMonitorSleepSecs` that is not a positive finite number; `field` names the option.
 */
export function resolveEngineOptions(options: unknown = {}): ResolvedEngineOptions {
  if (typeName(options) !== 'object') {
    throw new TimeseriesError(
      'TypeMismatch',
      `BucketEngine options must be an object, but got type '${typeName(options)}'`,
      { field: 'options' },
    );
  }
  const given: Partial<Record<OptionName, unknown>> = {};
  for (const name of Object.keys(options as object)) {
    if (!isOptionName(name)) {
      throw new TimeseriesError(
        'IDLUnknownField',
        `BSON field 'BucketEngineOptions.${name}' is an unknown field.`,
        {
          field: name,
        },
      );
    }
    const value = (options as Record<string, unknown>)[name];
    if (value === undefined) continue;
    check(name, value);
    given[name] = value;
  }
  const o = given as BucketEngineOptions;
  const dbName = o.dbName ?? 'tsbuckets';
  if (dbName === '') {
    throw new TimeseriesError('BadValue', 'Invalid database name: the empty string', { field: 'dbName' });
  }
  const ttlMonitorSleepSecs = o.ttlMonitorSleepSecs ?? 60;
  if (!Number.isFinite(ttlMonitorSleepSecs) || ttlMonitorSleepSecs <= 0) {
    throw new TimeseriesError(
      'BadValue',
      `Invalid value for ttlMonitorSleepSecs: ${String(ttlMonitorSleepSecs)} is not a positive number`,
      { field: 'ttlMonitorSleepSecs' },
    );
  }
  return Object.freeze({
    storage: o.storage ?? new MemoryStorage(),
    parameters: resolveServerParameters(o.parameters ?? {}),
    clock: o.clock ?? systemClock,
    dbName,
    compression: o.compression ?? 'onClose',
    reopening: o.reopening ?? 'enabled',
    ttlMonitor: o.ttlMonitor ?? 'enabled',
    ttlMonitorSleepSecs,
  });
}
