/**
 * `tsbuckets/mongodb`: bucket documents in MongoDB through the official driver. The only entry point that
 * loads the `mongodb` package; the core (`tsbuckets`) never does.
 *
 * Explicit named exports only: this list is the public surface of the subpath.
 *
 * @packageDocumentation
 */
export { MongoStorage } from './mongo-storage.js';
export {
  kDefaultInitialDelayMs,
  kDefaultMaxDelayMs,
  kDefaultMaxRetries,
  kOpenBucketForms,
  resolveMongoStorageOptions,
} from './mongo-storage-options.js';
export type {
  MongoStorageMode,
  MongoStorageOptions,
  MongoStorageRetryOptions,
  OpenBucketForm,
  ResolvedMongoStorageConfig,
  ResolvedRetryConfig,
} from './mongo-storage-options.js';
export { MongoStorageError, isDuplicateKeyError, isTransientMongoError } from './mongo-storage-error.js';
export type { MongoStorageErrorDetails, MongoStorageOperation } from './mongo-storage-error.js';
export { backoffDelayMs } from './retry.js';
export type { MongoCollectionLike, MongoCursorLike, MongoDbLike } from './driver-shape.js';
