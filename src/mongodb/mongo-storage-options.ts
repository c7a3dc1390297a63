/**
 * Options of `MongoStorage`, resolved once into a frozen config (STYLE rule 6): nothing downstream reads a
 * raw option.
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';

/**
 * Where bucket documents go on the server.
 *
 * - `'timeseries'`: `createNamespace` creates a native time-series collection `<name>` with the same
 *   options and bucket documents are written to its `system.buckets.<name>`; the server's own view
 *   (`db.<name>.find()`) reads what tsbuckets wrote.
 * - `'buckets'`: a plain collection `<name>.buckets`, for deployments without native time-series
 *   collections (older servers, MongoDB-compatible services); read through the tsbuckets reader.
 */
export type MongoStorageMode = 'timeseries' | 'buckets';

/** The modes, for validation and exhaustive tables. */
export const kMongoStorageModes: ReadonlyArray<MongoStorageMode> = Object.freeze(['timeseries', 'buckets']);

/**
 * How `MongoStorage` keeps a compressed bucket (the 8.0 format) on the server while it is open (docs/mongodb.md,
 * "Open buckets on the server"):
 * - `'measured'`: compressed, each commit sending its changed columns whole, until those have cost more
 *   than rewriting the bucket uncompressed would; then version 1 (each commit a `$set` of its cells),
 *   compressed again when the catalog closes it;
 * - `'compressed'`: compressed from the first commit to the last, as the 8.0 server keeps it;
 * - `'uncompressed'`: version 1 from its second commit until it closes, as 5.x–7.x keep buckets.
 */
export type OpenBucketForm = 'measured' | 'compressed' | 'uncompressed';

/** The valid {@link OpenBucketForm}s. */
export const kOpenBucketForms: ReadonlyArray<OpenBucketForm> = Object.freeze([
  'measured',
  'compressed',
  'uncompressed',
]);

/**
 * Retries of transient driver errors (network errors, server selection timeouts, errors labelled
 * `RetryableWriteError` or `TransientTransactionError`). The driver's own single retry (`retryWrites`,
 * `retryReads`) happens first; these retries come on top of it.
 *
 * The delay before retry `k` (0-based) is drawn uniformly from `[0, min(maxDelayMs, initialDelayMs * 2^k))`
 * ("full jitter" exponential backoff), so that writers that failed together do not retry together.
 */
export interface MongoStorageRetryOptions {
  /**
   * How many times an operation is retried after a transient error (`0` disables retries). An operation
   * is attempted at most `maxRetries + 1` times.
   * @defaultValue 5
   */
  readonly maxRetries?: number;
  /**
   * Upper bound of the first retry's delay, in milliseconds; doubled for each further retry.
   * @defaultValue 50
   */
  readonly initialDelayMs?: number;
  /**
   * Cap of the delay bound, in milliseconds.
   * @defaultValue 2000 (or `initialDelayMs`, if that is larger)
   */
  readonly maxDelayMs?: number;
  /**
   * Waits `ms` milliseconds. Injected by tests to run retries without timers.
   * @defaultValue a `setTimeout`-based sleep (its timer keeps the process alive while a call waits)
   */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * A uniform random number in `[0, 1)`, for jitter. Injected by tests for exact delays.
   * @defaultValue `Math.random`
   */
  readonly random?: () => number;
}

/** Options of `MongoStorage`. */
export interface MongoStorageOptions {
  /**
   * Native time-series collections (`system.buckets.<name>`) or plain `<name>.buckets` collections.
   * @defaultValue `'timeseries'`
   */
  readonly mode?: MongoStorageMode;
  /**
   * Retries of transient errors.
   * @defaultValue `{ maxRetries: 5, initialDelayMs: 50, maxDelayMs: 2000 }`
   */
  readonly retry?: MongoStorageRetryOptions;
  /**
   * Bucket writes one insert call may have in flight at once (`Storage.writeConcurrency`): an insert
   * that touches many series waits for about `buckets / writeConcurrency` round trips instead of one per
   * bucket. Bounded by the driver's connection pool (`maxPoolSize`, 100 by default).
   * @defaultValue 16
   */
  readonly writeConcurrency?: number;
  /**
   * How a compressed bucket is kept on the server while open: a commit that appends to a column can only
   * send the column whole (the driver has no binary diff), so a bucket that grows by a few measurements
   * per commit costs more and more per measurement; see {@link OpenBucketForm}.
   * @defaultValue `'measured'`
   */
  readonly openBucketForm?: OpenBucketForm;
}

/** Validated retry options. Built only by {@link resolveMongoStorageOptions}. */
export interface ResolvedRetryConfig {
  /** Retries after the first attempt. */
  readonly maxRetries: number;
  /** Bound of the first delay, ms. */
  readonly initialDelayMs: number;
  /** Cap of the delay bound, ms. */
  readonly maxDelayMs: number;
  /** Sleep. */
  readonly sleep: (ms: number) => Promise<void>;
  /** Uniform random in `[0, 1)`. */
  readonly random: () => number;
}

/** Validated, frozen options of `MongoStorage`. Built only by {@link resolveMongoStorageOptions}. */
export interface ResolvedMongoStorageConfig {
  /** The storage mode. */
  readonly mode: MongoStorageMode;
  /** Retry policy. */
  readonly retry: ResolvedRetryConfig;
  /** Bucket writes in flight per insert call. */
  readonly writeConcurrency: number;
  /** How compressed buckets are kept on the server while open. */
  readonly openBucketForm: OpenBucketForm;
}

/** Default retry count. */
export const kDefaultMaxRetries = 5;
/** Default bound of the first delay, ms. */
export const kDefaultInitialDelayMs = 50;
/** Default cap of the delay bound, ms. */
export const kDefaultMaxDelayMs = 2000;
/** Default bucket writes in flight per insert call. */
export const kDefaultWriteConcurrency = 16;

/**
 * Sleep with an ordinary timer. The timer keeps the process alive on purpose: a retry is part of a call
 * someone awaits, and with the driver's connection gone it may be the only thing left in the event loop;
 * an unref'd timer let the process exit with that call's promise never settled.
 *
 * @param ms - milliseconds.
 * @returns a promise resolved after `ms`.
 */
export function retrySleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    setTimeout(resolve, ms);
  });
}

/** The options {@link MongoStorageOptions} has: any other is refused, not ignored (a misspelt `mode`). */
const kOptionNames: ReadonlySet<string> = new Set(['mode', 'retry', 'writeConcurrency', 'openBucketForm']);
const kRetryOptionNames: ReadonlySet<string> = new Set([
  'maxRetries',
  'initialDelayMs',
  'maxDelayMs',
  'sleep',
  'random',
]);

/**
 * An options object with only known fields, as `BucketEngine` checks its own.
 *
 * @throws {@link TimeseriesError} `BadValue` when `value` is not an object; `IDLUnknownField` naming an
 *   unknown field.
 */
function checkKnownFields(value: unknown, names: ReadonlySet<string>, path: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TimeseriesError('BadValue', `${path} must be an object`, { field: path });
  }
  for (const name of Object.keys(value)) {
    if (!names.has(name)) {
      throw new TimeseriesError('IDLUnknownField', `BSON field '${path}.${name}' is an unknown field.`, {
        field: name,
      });
    }
  }
}

/**
 * Validate options and build the frozen config.
 *
 * @param options - the public options (all optional).
 * @returns the resolved config.
 * @throws {@link TimeseriesError} `BadValue` naming the option (`field`) for an unknown mode, a negative
 *   or non-integer `maxRetries`, a negative or non-finite delay, `initialDelayMs > maxDelayMs`, a
 *   `sleep`/`random` that is not a function, a `writeConcurrency` that is not a positive integer, or an
 *   unknown `openBucketForm`.
 */
export function resolveMongoStorageOptions(options: MongoStorageOptions = {}): ResolvedMongoStorageConfig {
  checkKnownFields(options, kOptionNames, 'MongoStorageOptions');
  if (options.retry !== undefined)
    checkKnownFields(options.retry, kRetryOptionNames, 'MongoStorageOptions.retry');
  const mode = options.mode ?? 'timeseries';
  if (!kMongoStorageModes.includes(mode)) {
    throw new TimeseriesError(
      'BadValue',
      `MongoStorage mode must be 'timeseries' or 'buckets', got '${mode}'`,
      {
        field: 'mode',
      },
    );
  }
  const retry = options.retry ?? {};
  const maxRetries = retry.maxRetries ?? kDefaultMaxRetries;
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) {
    throw new TimeseriesError(
      'BadValue',
      `retry.maxRetries must be a non-negative integer, got ${String(maxRetries)}`,
      {
        field: 'retry.maxRetries',
      },
    );
  }
  // A cap given alone below the default first delay bounds that too (the cap is what was asked for).
  const askedMaxDelayMs =
    retry.maxDelayMs === undefined ? undefined : delayOption(retry.maxDelayMs, 0, 'retry.maxDelayMs');
  const initialDelayMs = delayOption(
    retry.initialDelayMs,
    Math.min(kDefaultInitialDelayMs, askedMaxDelayMs ?? kDefaultInitialDelayMs),
    'retry.initialDelayMs',
  );
  const maxDelayMs = delayOption(
    retry.maxDelayMs,
    Math.max(kDefaultMaxDelayMs, initialDelayMs),
    'retry.maxDelayMs',
  );
  if (initialDelayMs > maxDelayMs) {
    throw new TimeseriesError(
      'BadValue',
      `retry.initialDelayMs (${initialDelayMs}) must not exceed retry.maxDelayMs (${maxDelayMs})`,
      { field: 'retry.initialDelayMs' },
    );
  }
  const sleep = functionOption(retry.sleep, retrySleep, 'retry.sleep');
  const random = functionOption(retry.random, Math.random, 'retry.random');
  const writeConcurrency = options.writeConcurrency ?? kDefaultWriteConcurrency;
  if (!Number.isSafeInteger(writeConcurrency) || writeConcurrency < 1) {
    throw new TimeseriesError(
      'BadValue',
      `writeConcurrency must be a positive integer, got ${String(writeConcurrency)}`,
      { field: 'writeConcurrency' },
    );
  }
  const openBucketForm = options.openBucketForm ?? 'measured';
  if (!kOpenBucketForms.includes(openBucketForm)) {
    throw new TimeseriesError(
      'BadValue',
      `openBucketForm must be 'measured', 'compressed' or 'uncompressed', got '${openBucketForm}'`,
      { field: 'openBucketForm' },
    );
  }
  return Object.freeze({
    mode,
    retry: Object.freeze({ maxRetries, initialDelayMs, maxDelayMs, sleep, random }),
    writeConcurrency,
    openBucketForm,
  });
}

function delayOption(value: number | undefined, fallback: number, field: string): number {
  const v = value ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
    throw new TimeseriesError('BadValue', `${field} must be a finite number >= 0, got ${String(v)}`, {
      field,
    });
  }
  return v;
}

function functionOption<F>(value: F | undefined, fallback: F, field: string): F {
  const v = value ?? fallback;
  if (typeof v !== 'function') {
    throw new TimeseriesError('BadValue', `${field} must be a function`, { field });
  }
  return v;
}
