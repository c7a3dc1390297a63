/**
 * From the engine's buckets namespaces (`<db>.system.buckets.<name>`) to server collection names, per
 * storage mode.
 *
 * The database is always the `Db` given to `MongoStorage`; the `<db>` part of the engine's namespace (the
 * engine's `dbName`) is not used to pick a database.
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';
import type { MongoStorageMode } from './mongo-storage-options.js';

/** The server collections behind one engine namespace. */
export interface ServerNamespace {
  /** The time-series collection's name (`<name>`): the view in mode `'timeseries'`. */
  readonly collectionName: string;
  /** The collection holding bucket documents: `system.buckets.<name>` or `<name>.buckets`. */
  readonly bucketsCollectionName: string;
}

const kBucketsNamespace = /^[^.]*\.system\.buckets\.(.+)$/su;

/**
 * Map an engine namespace that is not a buckets namespace (rollup documents, their definitions, entity
 * documents of rolling rollups: `<db>.<name>`) to its plain collection, which serves as both names.
 *
 * @param ns - `<db>.<name>`.
 * @returns the collection names, or `undefined` for a buckets namespace or a `system.` collection.
 */
export function plainNamespaceFor(ns: string): ServerNamespace | undefined {
  const dot = ns.indexOf('.');
  const name = ns.slice(dot + 1);
  if (dot < 0 || name.length === 0 || name.startsWith('system.')) return undefined;
  return { collectionName: name, bucketsCollectionName: name };
}

/**
 * Map an engine buckets namespace to server collection names.
 *
 * | mode           | buckets collection        |
 * | -------------- | ------------------------- |
 * | `'timeseries'` | `system.buckets.<name>`   |
 * | `'buckets'`    | `<name>.buckets`          |
 *
 * @param mode - the storage mode.
 * @param ns - `<db>.system.buckets.<name>`.
 * @returns the collection names.
 * @throws {@link TimeseriesError} `BadValue` (field `ns`) when `ns` is not a buckets namespace.
 */
export function serverNamespaceFor(mode: MongoStorageMode, ns: string): ServerNamespace {
  const match = kBucketsNamespace.exec(ns);
  const name = match?.[1];
  if (name === undefined) {
    throw new TimeseriesError(
      'BadValue',
      `'${ns}' is not a buckets namespace ('<db>.system.buckets.<name>')`,
      {
        field: 'ns',
      },
    );
  }
  switch (mode) {
    case 'timeseries':
      return { collectionName: name, bucketsCollectionName: `system.buckets.${name}` };
    case 'buckets':
      return { collectionName: name, bucketsCollectionName: `${name}.buckets` };
    default: {
      const never: never = mode;
      throw new TypeError(`unknown MongoStorage mode ${String(never)}`);
    }
  }
}
