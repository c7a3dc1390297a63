/**
 * `createIndex`, `listIndexes` and `dropIndex` on a time-series collection: specs are translated to the
 * buckets collection (`index-translation.ts`) and checked against the existing indexes as MongoDB's
 * `createIndexes` does.
 *
 * | request                                          | outcome                                        |
 * |--------------------------------------------------|------------------------------------------------|
 * | new name, new key                                | created                                        |
 * | same name, same key, same options                | nothing to do                                  |
 * | same name, same key, other options               | IndexOptionsConflict                           |
 * | same name, other key                             | IndexKeySpecsConflict                          |
 * | other name, same key and options                 | IndexOptionsConflict (exists with another name)|
 * | drop of an unknown name or key                   | IndexNotFound                                  |
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';
import type { ResolvedCollectionOptions } from '../options.js';
import type { Storage, StorageIndex } from '../storage/storage.js';
import { isPlainObject } from '../util/bson-value.js';
import { getOwnField } from '../util/safe-record.js';
import {
  bucketKeyPattern,
  renderIndexSpec,
  sameKeyPattern,
  translateIndexFromBuckets,
  translateIndexToBuckets,
} from './index-translation.js';
import type { CreateIndexOptions, IndexKeySpec, TimeseriesIndexDescription } from './index-translation.js';

/** Where a collection's indexes live. */
export interface IndexContext {
  /** The storage. */
  readonly storage: Storage;
  /** Namespace of the buckets collection. */
  readonly bucketsNs: string;
  /** The collection's options. */
  readonly options: Pick<ResolvedCollectionOptions, 'timeField' | 'metaField' | 'bucketMaxSpanSeconds'>;
}

/** The user's options of a stored index, without its name (for equivalence checks). */
function userOptionsOf(index: StorageIndex): string {
  const original = index.options === undefined ? undefined : getOwnField(index.options, 'originalSpec');
  if (!isPlainObject(original)) return '{}';
  const { key: _key, name: _name, ...rest } = original;
  return renderIndexSpec(rest);
}

/**
 * Create an index.
 *
 * @param ctx - storage, buckets namespace and options.
 * @param key - the key pattern over measurement fields.
 * @param options - index options.
 * @returns the index name.
 * @throws {@link TimeseriesError} for a refused spec (see `index-translation.ts`) or a conflict with an
 *   existing index (`IndexOptionsConflict`, `IndexKeySpecsConflict`).
 */
export async function createIndex(
  ctx: IndexContext,
  key: IndexKeySpec,
  options: CreateIndexOptions = {},
): Promise<string> {
  const index = translateIndexToBuckets(ctx.options, key, options);
  const existing = await ctx.storage.listIndexes(ctx.bucketsNs);
  const requestedOptions = userOptionsOf(index);
  for (const other of existing) {
    const sameKey = sameKeyPattern(other.key, index.key);
    const sameOptions = userOptionsOf(other) === requestedOptions;
    if (other.name === index.name) {
      if (sameKey && sameOptions) return index.name;
      if (sameKey) {
        throw new TimeseriesError(
          'IndexOptionsConflict',
          `An equivalent index already exists with the same name but different options. Requested index: ${renderIndexSpec(getOwnField(index.options ?? {}, 'originalSpec'))}, existing index: ${renderIndexSpec(translateIndexFromBuckets(ctx.options, other))}`,
        );
      }
      throw new TimeseriesError(
        'IndexKeySpecsConflict',
        `An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: ${renderIndexSpec(getOwnField(index.options ?? {}, 'originalSpec'))}, existing index: ${renderIndexSpec(translateIndexFromBuckets(ctx.options, other))}`,
      );
    }
    if (sameKey && sameOptions) {
      throw new TimeseriesError(
        'IndexOptionsConflict',
        `Index already exists with a different name: ${other.name}`,
      );
    }
  }
  await ctx.storage.createIndex(ctx.bucketsNs, index);
  return index.name;
}

/**
 * The collection's indexes as the user created them.
 *
 * @param ctx - storage, buckets namespace and options.
 * @returns one description per index with a time-series form.
 */
export async function listIndexes(ctx: IndexContext): Promise<TimeseriesIndexDescription[]> {
  const out: TimeseriesIndexDescription[] = [];
  for (const index of await ctx.storage.listIndexes(ctx.bucketsNs)) {
    const description = translateIndexFromBuckets(ctx.options, index);
    if (description !== undefined) out.push(description);
  }
  return out;
}

/**
 * Drop an index by name, or by its key pattern over measurement fields; `'*'` drops every index (the
 * server's `dropIndexes` with `'*'`: all but `_id`'s, which a time-series collection does not list).
 *
 * @param ctx - storage, buckets namespace and options.
 * @param nameOrKey - the index name, `'*'`, or its key pattern.
 * @throws {@link TimeseriesError} `IndexNotFound` when no such index exists.
 */
export async function dropIndex(ctx: IndexContext, nameOrKey: string | IndexKeySpec): Promise<void> {
  if (nameOrKey === '*') {
    for (const index of await ctx.storage.listIndexes(ctx.bucketsNs)) {
      await ctx.storage.dropIndex(ctx.bucketsNs, index.name);
    }
    return;
  }
  let name: string;
  if (typeof nameOrKey === 'string') {
    name = nameOrKey;
  } else {
    const key = bucketKeyPattern(ctx.options, nameOrKey);
    const found = (await ctx.storage.listIndexes(ctx.bucketsNs)).find((index) =>
      sameKeyPattern(index.key, key),
    );
    if (found === undefined) {
      throw new TimeseriesError('IndexNotFound', `can't find index with key: ${renderIndexSpec(nameOrKey)}`);
    }
    name = found.name;
  }
  if (!(await ctx.storage.dropIndex(ctx.bucketsNs, name))) {
    throw new TimeseriesError('IndexNotFound', `index not found with name [${name}]`);
  }
}
