/**
 * The read handle of one rollup (`coll.rollup(name)`): `find`, `aggregate` and `explain` over its
 * documents. Reads first bring the collection's rollups up to date (a rollup write that failed is
 * recomputed), so a read sees every acknowledged measurement exactly once.
 *
 * Slot documents gain `avg` where the spec asks for it; rolling documents are read "as of now" (the
 * engine's clock): entries that left the window are dropped and `count` (and each summed field) is the
 * window's total, as the hand-written read pipeline does.
 *
 * @packageDocumentation
 */
import { Aggregator } from 'mingo';

import type { Storage, StorageFindOptions } from '../storage/storage.js';
import { cloneBsonValue, isPlainObject } from '../util/bson-value.js';
import type { Clock } from '../util/clock.js';
import { defineField, getOwnField } from '../util/safe-record.js';
import type { ResolvedRollupSpec } from './spec.js';

/** A rollup document as read. */
export type RollupDocument = Record<string, unknown>;

/** Options of {@link RollupHandle.find}. */
export interface RollupFindOptions {
  /** MongoDB sort specification. */
  readonly sort?: Readonly<Record<string, 1 | -1>>;
  /** Maximum number of documents (0: no limit). @defaultValue 0 */
  readonly limit?: number;
}

/** What {@link RollupHandle.explain} reports. */
export interface RollupExplain {
  /** The rollup name. */
  readonly name: string;
  /** Its layout. */
  readonly layout: ResolvedRollupSpec['layout'];
  /** Namespace of its documents (the target collection for a rolling rollup). */
  readonly namespace: string;
  /** How a find with `filter` reads: by `_id` (a keyed fetch) or a scan of the namespace. */
  readonly stage: 'IDHACK' | 'COLLSCAN';
  /** The spec as given. */
  readonly spec: ResolvedRollupSpec['spec'];
}

/** A rollup's read handle. Obtain one with `coll.rollup(name)`. */
export interface RollupHandle {
  /** The rollup name. */
  readonly name: string;
  /**
   * Find rollup documents.
   *
   * @param filter - a MongoDB filter over rollup documents (`{ group: 'a' }`, `{ _id: { $in: ids } }`).
   * @param options - sort and limit.
   * @returns copies of the documents.
   * @example
   * ```ts
   * const hours = await coll.rollup('hourly').find({ group: 'a' }, { sort: { start: 1 } });
   * ```
   */
  find(filter?: Readonly<Record<string, unknown>>, options?: RollupFindOptions): Promise<RollupDocument[]>;
  /**
   * Aggregate over rollup documents (a leading `$match` is applied by the storage).
   *
   * @param pipeline - aggregation stages.
   * @returns the results.
   */
  aggregate(pipeline: ReadonlyArray<Readonly<Record<string, unknown>>>): Promise<RollupDocument[]>;
  /**
   * How a find would read.
   *
   * @param filter - the filter of the find.
   * @returns the plan.
   */
  explain(filter?: Readonly<Record<string, unknown>>): Promise<RollupExplain>;
}

/** What a handle needs from its rollup set. */
export interface HandleContext {
  readonly storage: Storage;
  readonly clock: Clock;
  readonly spec: ResolvedRollupSpec;
  readonly ns: string;
  /** Brings rollups up to date before a read. */
  readonly settle: () => Promise<void>;
}

/**
 * A read handle.
 *
 * @param ctx - storage, clock, spec and namespace.
 * @returns the handle.
 */
export function makeRollupHandle(ctx: HandleContext): RollupHandle {
  const find = async (
    filter: Readonly<Record<string, unknown>> = {},
    options: RollupFindOptions = {},
  ): Promise<RollupDocument[]> => {
    await ctx.settle();
    const findOptions: StorageFindOptions = {
      ...(options.sort === undefined ? {} : { sort: options.sort }),
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    };
    const now = ctx.clock();
    const out: RollupDocument[] = [];
    for await (const doc of ctx.storage.find(ctx.ns, filter, findOptions))
      out.push(present(ctx.spec, doc, now));
    return out;
  };
  return Object.freeze({
    name: ctx.spec.name,
    find,
    aggregate: async (
      pipeline: ReadonlyArray<Readonly<Record<string, unknown>>>,
    ): Promise<RollupDocument[]> => {
      const first = pipeline[0];
      const leading = first !== undefined && Object.keys(first).length === 1 && isPlainObject(first.$match);
      const docs = await find(leading ? (first.$match as Record<string, unknown>) : {});
      const rest = leading ? pipeline.slice(1) : pipeline;
      if (rest.length === 0) return docs;
      return new Aggregator(rest as Array<Record<string, unknown>>).run<RollupDocument>(docs);
    },
    explain: (filter: Readonly<Record<string, unknown>> = {}): Promise<RollupExplain> =>
      Promise.resolve({
        name: ctx.spec.name,
        layout: ctx.spec.layout,
        namespace: ctx.ns,
        stage: Object.prototype.hasOwnProperty.call(filter, '_id') ? 'IDHACK' : 'COLLSCAN',
        spec: ctx.spec.spec,
      }),
  });
}

/** A stored document as users read it: a copy, with `avg` (slots) or the window's totals (rolling). */
function present(
  spec: ResolvedRollupSpec,
  stored: Readonly<Record<string, unknown>>,
  now: number,
): RollupDocument {
  const doc = cloneBsonValue(stored) as RollupDocument;
  switch (spec.layout) {
    case 'slots':
      for (const f of spec.fields) {
        const acc = getOwnField(doc, f.name);
        if (f.avg && isPlainObject(acc)) {
          const count = Number(acc.count);
          acc.avg = count > 0 ? Number(acc.sum) / count : null;
        }
      }
      return doc;
    case 'calendar':
      return doc;
    case 'rolling': {
      // Expiry on read: the window ending at the current step.
      const step = now - (((now % spec.stepMs) + spec.stepMs) % spec.stepMs);
      const floor = step - (spec.windowMs - spec.stepMs);
      const raw = getOwnField(doc, 'totals');
      const totals = (Array.isArray(raw) ? raw : []).filter(
        (e: unknown) => isPlainObject(e) && e.timestamp instanceof Date && e.timestamp.getTime() >= floor,
      ) as Array<Record<string, unknown>>;
      doc.totals = totals;
      doc.count = totals.reduce((s, e) => s + Number(e.count ?? 0), 0);
      for (const f of spec.fields)
        defineField(
          doc,
          f.name,
          totals.reduce((s, e) => s + Number(e[f.name] ?? 0), 0),
        );
      return doc;
    }
    default: {
      const never: never = spec;
      throw new TypeError(`unknown layout ${String(never)}`);
    }
  }
}
