/**
 * tsbuckets: MongoDB's time-series engine as a TypeScript library.
 *
 * Explicit named exports only: this list is the public surface (pinned by `test/exports.test.ts`).
 *
 * @packageDocumentation
 */
export { BucketEngine } from './engine/bucket-engine.js';
export type { BucketEngineOptions, ServerStatus, TTLPassResult } from './engine/bucket-engine.js';
export { TimeseriesCollection } from './engine/timeseries-collection.js';
export type {
  BucketsView,
  CollectionStats,
  InferIdType,
  InsertManyOptions,
  InsertManyResult,
  InsertOneResult,
} from './engine/timeseries-collection.js';
export type { UpdateManyOptions, UpdateResult } from './engine/timeseries-update.js';
export type { DeleteManyOptions, DeleteResult } from './engine/timeseries-delete.js';
export type {
  CreateIndexOptions,
  IndexKeySpec,
  TimeseriesIndexDescription,
} from './engine/index-translation.js';
export { Cursor } from './reader/cursor.js';
export { ReaderCursor } from './reader/reader.js';
export type { ExplainResult, FindOptions, MeasurementDocument, PipelineStage } from './reader/reader.js';
export type { FindSort, SortDirection } from './util/query-validation.js';
export type { QueryFilter } from './util/bson-query.js';
export type {
  CalendarRollupSpec,
  RollingRollupSpec,
  RollupAccumulator,
  RollupGroupBy,
  RollupSpec,
  SlotsRollupSpec,
} from './rollups/spec.js';
export type { RollupDocument, RollupExplain, RollupFindOptions, RollupHandle } from './rollups/handle.js';
export type {
  CreateRollupOptions,
  RollupBackfillProgress,
  RollupDescription,
  RollupStats,
} from './rollups/rollup-set.js';
export { BSONColumn, BSONColumnBuilder, applyBinaryDiff } from './bucket-format/bson-column/bson-column.js';
export type { BSONColumnCodec, BinaryDiff, DecodeOptions } from './bucket-format/bson-column/bson-column.js';
export { BucketCatalog } from './catalog/bucket-catalog.js';
export type {
  BucketCatalogOptions,
  BucketCatalogServerStatus,
  BucketingOptions,
  CatalogParameters,
  CombineWithInsertsFromOtherClients,
  CommitInfo,
  DirectWriteTarget,
  InsertItem,
  PreparedCommit,
  ReopeningSource,
  StageResult,
  WriteBatch,
} from './catalog/bucket-catalog.js';
export { makeBucketMetadata } from './catalog/bucket-metadata.js';
export type { BucketMetadata } from './catalog/bucket-metadata.js';
export { copyMeasurement } from './util/bson-validation.js';
export type { MeasurementLayout } from './util/bson-validation.js';
export type { ExecutionStatsSnapshot, CounterName } from './catalog/execution-stats.js';
export type { RolloverAction, RolloverReason } from './catalog/rollover.js';
export { MemoryStorage } from './storage/memory-storage.js';
export type {
  BucketFilter,
  BucketUpdateDocument,
  BucketWrite,
  BucketWriteOutcome,
  CommitWritesOptions,
  ReopeningQuery,
  Storage,
  StorageFindOptions,
  StorageIndex,
  StorageUpdateResult,
  StoredBucket,
} from './storage/storage.js';
export { counterUpdateDocument } from './storage/counter-update.js';
export type { CounterOperator, CounterUpdate, FieldPath } from './storage/counter-update.js';
export {
  BulkWriteError,
  ErrorCodes,
  InternalInvariantError,
  TimeseriesError,
  TsBucketsError,
} from './errors.js';
export type { ErrorCodeName, TimeseriesErrorDetails, WriteError } from './errors.js';
export type {
  CollModOptions,
  CreateCollectionOptions,
  Granularity,
  ResolvedCollectionOptions,
  ServerParameters,
  TimeseriesOptions,
} from './options.js';
export { bucketUpdateDocument, commitGuardFilter } from './bucket-format/bucket-document.js';
export type {
  BucketCommit,
  BucketDelta,
  BucketDocumentV1,
  BucketSeries,
  BucketUpdate,
  ControlV1,
  DeltaColumn,
  Measurement,
} from './bucket-format/bucket-document.js';
export type { Clock } from './util/clock.js';
