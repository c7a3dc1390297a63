/**
 * Driver errors as tsbuckets errors: a {@link MongoStorageError} carries the server's `code` and `codeName`
 * (so an `insertMany` write error reports them), the operation and collection, the number of attempts,
 * and the driver's error as `cause`.
 *
 * @packageDocumentation
 */
import { TimeseriesError, TsBucketsError } from '../errors.js';
import { driver } from './driver.js';

/** The storage operations that reach the server. */
export type MongoStorageOperation =
  | 'createNamespace'
  | 'setNamespaceOptions'
  | 'dropNamespace'
  | 'insertOne'
  | 'updateOne'
  | 'bulkWrite'
  | 'upsertOne'
  | 'replaceOne'
  | 'updateMany'
  | 'find'
  | 'deleteMany'
  | 'countDocuments'
  | 'totalSize'
  | 'createIndex'
  | 'listIndexes'
  | 'dropIndex';

/** The server's duplicate key error code. */
export const kDuplicateKeyCode = 11000;

/** Structured details of a {@link MongoStorageError}. */
export interface MongoStorageErrorDetails {
  /** The storage operation. */
  readonly operation: MongoStorageOperation;
  /** The server collection (`system.buckets.<name>` or `<name>.buckets`). */
  readonly collection: string;
  /** How many times the operation was attempted. */
  readonly attempts: number;
  /** The driver's error. */
  readonly cause: unknown;
}

/**
 * A storage operation failed on the server or in the driver (after retries, for transient errors).
 *
 * `code`/`codeName` are the server's when it sent them, else derived from the driver error:
 * a network timeout is `89 NetworkTimeout`, another network or server-selection error `6 HostUnreachable`,
 * anything else `1 InternalError`. Like a {@link TimeseriesError} it has a numeric `code` and a
 * `codeName`, so `TimeseriesError.isTimeseriesError` accepts it and `insertMany` reports its code.
 */
export class MongoStorageError extends TsBucketsError {
  /** The server's numeric error code (or one derived from the driver error). */
  readonly code: number;
  /** The server's error code name. */
  readonly codeName: string;
  /** The storage operation. */
  readonly operation: MongoStorageOperation;
  /** The server collection. */
  readonly collection: string;
  /** How many times the operation was attempted. */
  readonly attempts: number;
  /** The driver error's labels (e.g. `RetryableWriteError`), if any. */
  readonly errorLabels: ReadonlyArray<string>;

  /**
   * @param details - operation, collection, attempts and the driver's error (`cause`).
   */
  constructor(details: MongoStorageErrorDetails) {
    const { cause } = details;
    const text =
      cause instanceof Error ? cause.message : isWriteError(cause) ? String(cause.errmsg) : String(cause);
    super(
      `MongoStorage ${details.operation} on '${details.collection}' failed after ${details.attempts} attempt(s): ${text}`,
      { cause },
    );
    const [code, codeName] = codeOf(cause);
    this.code = code;
    this.codeName = codeName;
    this.operation = details.operation;
    this.collection = details.collection;
    this.attempts = details.attempts;
    this.errorLabels = Object.freeze([...errorLabelsOf(cause)]);
  }

  override get name(): string {
    return 'MongoStorageError';
  }

  /**
   * Whether `value` is a {@link MongoStorageError} from any copy of tsbuckets.
   *
   * @param value - anything.
   * @returns `true` for a MongoStorage error.
   */
  static isMongoStorageError(value: unknown): value is MongoStorageError {
    return (
      TimeseriesError.isTimeseriesError(value) &&
      typeof (value as { operation?: unknown }).operation === 'string' &&
      typeof (value as { attempts?: unknown }).attempts === 'number'
    );
  }
}

/**
 * Whether `error` is the server's duplicate key error (code 11000).
 *
 * @param error - anything thrown by the driver.
 * @returns `true` for a duplicate key error.
 */
export function isDuplicateKeyError(error: unknown): boolean {
  return isDriverError(error) && (error as { code?: unknown }).code === kDuplicateKeyCode;
}

/**
 * Whether a driver error is transient, so that the operation may be retried: a network error (including
 * timeouts), a server selection error, or an error labelled `RetryableWriteError` or
 * `TransientTransactionError`.
 *
 * @param error - anything thrown by the driver.
 * @returns `true` for a transient error.
 */
export function isTransientMongoError(error: unknown): boolean {
  if (!isDriverError(error)) return false;
  if (isNetworkError(error) || error instanceof driver.MongoServerSelectionError) return true;
  if (error.name === 'MongoServerSelectionError') return true;
  const labels = errorLabelsOf(error);
  return labels.includes('RetryableWriteError') || labels.includes('TransientTransactionError');
}

/**
 * Whether a driver error says the client's topology is closed (`MongoTopologyClosedError`): after a
 * failed first connection, or after `client.close()`.
 *
 * @param error - anything thrown by the driver.
 * @returns `true` for a topology-closed error.
 */
export function isTopologyClosed(error: unknown): boolean {
  return (
    error instanceof driver.MongoTopologyClosedError ||
    (error instanceof Error && error.name === 'MongoTopologyClosedError')
  );
}

/**
 * Driver errors are recognised by class and, for a `Db` from another copy of the driver (where
 * `instanceof` fails), by their `name` (`MongoNetworkError`, ...) and `errorLabels`.
 */
function isDriverError(error: unknown): error is Error {
  return error instanceof driver.MongoError || (error instanceof Error && error.name.startsWith('Mongo'));
}

/**
 * A network error, or a client-side operation timeout (`timeoutMS`, the driver's
 * `MongoOperationTimeoutError`): either may have lost the reply of a write the server applied.
 */
function isNetworkError(error: Error): boolean {
  return (
    error instanceof driver.MongoNetworkError ||
    error.name === 'MongoNetworkError' ||
    error.name === 'MongoNetworkTimeoutError' ||
    isOperationTimeout(error)
  );
}

function isOperationTimeout(error: unknown): boolean {
  return error instanceof Error && error.name === 'MongoOperationTimeoutError';
}

function errorLabelsOf(error: unknown): ReadonlyArray<string> {
  const labels = isDriverError(error) ? (error as { errorLabels?: unknown }).errorLabels : undefined;
  return Array.isArray(labels) ? labels.filter((l): l is string => typeof l === 'string') : [];
}

/**
 * One operation's error in a bulk write (the driver's `WriteError`, which is not an `Error`): its index,
 * the server's code and message.
 */
function isWriteError(error: unknown): error is { readonly code: number; readonly errmsg?: unknown } {
  return (
    typeof error === 'object' &&
    error !== null &&
    !(error instanceof Error) &&
    typeof (error as { code?: unknown }).code === 'number' &&
    typeof (error as { index?: unknown }).index === 'number'
  );
}

/** The names of the codes a write error carries without one (a `WriteError` has only the number). */
const kWriteErrorCodeNames: ReadonlyMap<number, string> = new Map([
  [13, 'Unauthorized'],
  [50, 'MaxTimeMSExpired'],
  [64, 'WriteConcernFailed'],
  [121, 'DocumentValidationFailure'],
  [10107, 'NotWritablePrimary'],
  [11000, 'DuplicateKey'],
  [11602, 'InterruptedDueToReplStateChange'],
]);

function codeOf(error: unknown): [number, string] {
  if (isWriteError(error)) {
    const named = (error as { codeName?: unknown }).codeName;
    return [
      error.code,
      typeof named === 'string' ? named : (kWriteErrorCodeNames.get(error.code) ?? `Location${error.code}`),
    ];
  }
  const code = isDriverError(error) ? (error as { code?: unknown }).code : undefined;
  if (typeof code === 'number') {
    const codeName = (error as { codeName?: unknown }).codeName;
    return [code, typeof codeName === 'string' ? codeName : 'UnknownError'];
  }
  if (
    error instanceof driver.MongoNetworkTimeoutError ||
    (error instanceof Error && error.name === 'MongoNetworkTimeoutError')
  ) {
    return [89, 'NetworkTimeout'];
  }
  // The server's code for an operation past its time limit (the driver sends `timeoutMS` as maxTimeMS).
  if (isOperationTimeout(error)) return [50, 'MaxTimeMSExpired'];
  if (isTransientMongoError(error)) return [6, 'HostUnreachable'];
  return [1, 'InternalError'];
}
