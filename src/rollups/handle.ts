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

import type { Storage, StorageFindOptions } from '../storage/storage.js';
import { cloneBsonValue, isPlainObject, ownValue } from '../util/bson-value.js';
import { pipelineAggregator } from '../util/mingo-pipeline.js';
import { mingoDocuments } from '../util/mingo-values.js';
import { checkFilter, checkPipeline, findSortDocument, mingoCall } from '../util/query-validation.js';
import type { FindSort } from '../util/query-validation.js';
import type { Clock } from '../util/clock.js';
import { defineField, getOwnField } from '../util/safe-record.js';
import type { ResolvedRollupSpec } from './spec.js';

/** A rollup document as read. */
export type RollupDocument = Record<string, unknown>;

/** Options of {@link RollupHandle.find}. */
export interface RollupFindOptions {
  /** Sort specification, in the forms `find` takes (`{ start: -1 }`, `{ start: 'desc' }`, pairs). */
  readonly sort?: FindSort;
  /** Maximum number of documents (0: no limit). @defaultValue 0 */
  readonly limit?: number;
  /**
   * Top-level fields to include (`1`) or exclude (`0`), applied to the documents as read (a rolling
   * rollup's `count` is computed before `totals` is excluded: `{ totals: 0 }` is the classic read).
   */
  readonly projection?: Readonly<Record<string, 0 | 1>>;
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
    // Checked like every filter: mingo would otherwise parse a string or run a `$where`.
    checkFilter(filter, 'find.filter');
    await ctx.settle();
    // Any other direction is refused (BadValue), not read as ascending.
    const sort = options.sort === undefined ? undefined : findSortDocument(options.sort);
    const findOptions: StorageFindOptions = {
      ...(sort === undefined ? {} : { sort }),
      ...(options.limit === undefined ? {} : { limit: options.limit }),
    };
    const now = ctx.clock();
    const keep = projector(options.projection);
    const out: RollupDocument[] = [];
    const visit = ctx.storage.visitDocuments?.bind(ctx.storage);
    if (visit !== undefined && options.sort === undefined && options.limit === undefined) {
      // In place: `present` copies only what it returns (a rolling read sums `totals` without a copy).
      await visit(ctx.ns, filter, (doc) => out.push(present(ctx.spec, doc, now, keep)));
      return out;
    }
    for await (const doc of ctx.storage.find(ctx.ns, filter, findOptions)) {
      out.push(present(ctx.spec, doc, now, keep));
    }
    return out;
  };
  return Object.freeze({
    name: ctx.spec.name,
    find,
    aggregate: async (
      pipeline: ReadonlyArray<Readonly<Record<string, unknown>>>,
    ): Promise<RollupDocument[]> => {
      checkPipeline(pipeline);
      const first = pipeline[0];
      const leading = first !== undefined && Object.keys(first).length === 1 && isPlainObject(first.$match);
      const docs = await find(leading ? (first.$match as Record<string, unknown>) : {});
      const rest = leading ? pipeline.slice(1) : pipeline;
      if (rest.length === 0) return docs;
      return mingoCall(() =>
        pipelineAggregator(rest as Array<Record<string, unknown>>).run<RollupDocument>(mingoDocuments(docs)),
      );
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

/** Which top-level fields a projection keeps. */
type Keep = (field: string) => boolean;

function projector(projection: Readonly<Record<string, 0 | 1>> | undefined): Keep {
  if (projection === undefined) return () => true;
  const fields = Object.keys(projection);
  const including = fields.some((f) => f !== '_id' && projection[f] === 1);
  const set = new Set(fields.filter((f) => (projection[f] === 1) === including));
  const keepId = projection._id !== 0;
  return (field) => (field === '_id' ? keepId : including === set.has(field));
}

/**
 * A stored document as users read it: a copy of the projected fields, with `avg` (slots) or the window's
 * totals (rolling). Only kept fields are copied: a rolling read that drops `totals` sums the stored
 * entries without copying them.
 */
function present(
  spec: ResolvedRollupSpec,
  stored: Readonly<Record<string, unknown>>,
  now: number,
  keep: Keep,
): RollupDocument {
  const doc: RollupDocument = {};
  for (const key of Object.keys(stored)) if (keep(key)) defineField(doc, key, ownValue(stored[key]));
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
      const raw = getOwnField(stored, 'totals');
      const entries = Array.isArray(raw) ? (raw as unknown[]) : [];
      const keepTotals = keep('totals');
      const live: Array<Record<string, unknown>> = [];
      let count = 0;
      const sums = spec.fields.map(() => 0);
      // One pass over the stored entries; they are copied only when `totals` is returned.
      for (const e of entries) {
        if (!isPlainObject(e) || !(e.timestamp instanceof Date) || e.timestamp.getTime() < floor) continue;
        count += Number(e.count ?? 0);
        for (let i = 0; i < sums.length; i++) {
          sums[i] = (sums[i] as number) + Number(e[(spec.fields[i] as { name: string }).name] ?? 0);
        }
        if (keepTotals) live.push(cloneBsonValue(e) as Record<string, unknown>);
      }
      if (keepTotals) doc.totals = live;
      if (keep('count')) doc.count = count;
      spec.fields.forEach((f, i) => {
        if (keep(f.name)) defineField(doc, f.name, sums[i]);
      });
      return doc;
    }
    default: {
      const never: never = spec;
      throw new TypeError(`unknown layout ${String(never)}`);
    }
  }
}
