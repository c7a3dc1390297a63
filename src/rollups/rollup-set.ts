/**
 * The rollups of one time-series collection: their definitions (persisted in the storage collection
 * `tsbuckets.rollups`, so another engine on the same storage finds them), the commit-time fold, the
 * recomputations after direct writes (deletes, meta updates, TTL) and failed rollup writes, the backfill
 * of a new rollup, and the per-rollup stats.
 *
 * Exactness: a commit enters the collection's {@link RollupGate} before preparing its batch and leaves it
 * after folding the batch into every rollup, between its bucket write and the publication of its result.
 * A fold whose write fails does not fail the commit (the measurements are stored): the affected slots are
 * marked and recomputed from the buckets before the next read or direct write. Recomputations hold the
 * gate exclusively.
 *
 * @packageDocumentation
 */
import type { WriteBatch } from '../catalog/write-batch.js';
import { ErrorCodes, TimeseriesError } from '../errors.js';
import type { BucketFilter, Storage, StoredBucket } from '../storage/storage.js';
import { isPlainObject } from '../util/bson-value.js';
import type { Clock } from '../util/clock.js';
import { getOwnField, hasOwnField } from '../util/safe-record.js';
import type { SlotAcc } from './accumulator.js';
import { counterWritesOf } from './counter-writes.js';
import type { CounterWrites, RollupTarget } from './counter-writes.js';
import { foldRound, releaseSlotAccs } from './fold-batch.js';
import type { FoldedRollup, RoundFold } from './fold-batch.js';
import { GroupCache } from './group.js';
import type { RollupGroup } from './group.js';
import { makeRollupHandle } from './handle.js';
import type { RollupHandle } from './handle.js';
import { recomputeRollup } from './recompute.js';
import type { AffectedSeries, RawSource } from './recompute.js';
import { RollupGate } from './rollup-gate.js';
import type { GateToken } from './rollup-gate.js';
import { rollupPlan, writeGroup } from './rollup-writer.js';
import type { RollupPlan } from './rollup-writer.js';
import { resolveRollupSpec } from './spec.js';
import type { ResolvedRollupSpec, RollupSpec } from './spec.js';

/** Counters of one rollup (they only go up), in `coll.stats().rollups[name]`. */
export interface RollupStats {
  /** Measurements folded at commit time. */
  readonly measurementsFolded: number;
  /** Slot accumulators written at commit time (one per touched slot, group and insert call). */
  readonly slotsUpdated: number;
  /** Rollup documents written (updates, upserts, inserts, rewrites). */
  readonly documentsWritten: number;
  /** Calendar documents created by this engine's three-step initialisations. */
  readonly documentsInitialized: number;
  /** Commit-time rollup writes that failed (their slots were recomputed). */
  readonly writeFailures: number;
  /** Recomputations from the buckets (after deletes, meta updates, TTL, failed writes). */
  readonly recomputations: number;
  /** Measurements read by recomputations and the backfill. */
  readonly measurementsRecomputed: number;
}

/** A rollup as `listRollups()` describes it. */
export interface RollupDescription {
  /** Its name. */
  readonly name: string;
  /** The spec as given at creation. */
  readonly spec: RollupSpec;
  /** Namespace of its documents (`<db>.<collection>.rollup.<name>`, or the target of a rolling rollup). */
  readonly namespace: string;
}

/** Backfill progress, reported to {@link CreateRollupOptions.onProgress}. */
export interface RollupBackfillProgress {
  /** Measurements read so far. */
  readonly measurements: number;
  /** `true` on the last report, once documents are written. */
  readonly done: boolean;
}

/** Options of `createRollup`. */
export interface CreateRollupOptions {
  /** Called during the backfill from the existing buckets (after every 1 000 measurements, and at the end). */
  readonly onProgress?: (progress: RollupBackfillProgress) => void;
}

/** What a collection's rollups need from it. */
export interface RollupSetContext {
  readonly storage: Storage;
  readonly clock: Clock;
  readonly dbName: string;
  readonly collectionName: string;
  readonly bucketsNs: string;
  readonly timeField: string;
  readonly metaField: string | undefined;
  /** Raw measurements (the collection's find). */
  readonly raw: RawSource;
}

type MutableStats = { -readonly [K in keyof RollupStats]: number };

interface RollupState extends FoldedRollup {
  readonly spec: ResolvedRollupSpec;
  readonly ns: string;
  /** Where its writes go (`target.ns` is `ns`). */
  readonly target: RollupTarget;
  /** What its writes reuse from one commit to the next. */
  readonly plan: RollupPlan;
  readonly groups: GroupCache;
  /** Accumulators of finished commit-time writes, reused by the next folds. */
  readonly pool: SlotAcc[];
  readonly stats: MutableStats;
}

/**
 * Namespace of the rollup definitions of every collection of a database.
 *
 * @param dbName - the engine's database.
 * @returns the namespace.
 */
export function rollupDefinitionsNamespace(dbName: string): string {
  return `${dbName}.tsbuckets.rollups`;
}

/** The rollups of one collection. */
export class RollupSet {
  readonly #ctx: RollupSetContext;
  /** How counters reach the storage, chosen once (structured when the storage applies them itself). */
  readonly #counters: CounterWrites;
  readonly #gate = new RollupGate();
  readonly #rollups = new Map<string, RollupState>();
  /** The rollups as an array, for the fold (rebuilt when a rollup is added or removed). */
  #folded: ReadonlyArray<RollupState> = [];
  #loaded: Promise<void> | undefined;
  #isLoaded = false;
  /** Series whose slots must be recomputed (a rollup write failed). */
  #dirty: AffectedSeries[] = [];

  /** @param ctx - storage, clock, names and fields of the collection. */
  constructor(ctx: RollupSetContext) {
    this.#ctx = ctx;
    this.#counters = counterWritesOf(ctx.storage);
  }

  /**
   * Load the persisted definitions once. Later calls cost a flag check.
   *
   * @returns when loaded.
   */
  ready(): Promise<void> | undefined {
    if (this.#isLoaded) return undefined;
    this.#loaded ??= this.#load().then(
      () => {
        this.#isLoaded = true;
      },
      (error: unknown) => {
        this.#loaded = undefined;
        throw error;
      },
    );
    return this.#loaded;
  }

  async #load(): Promise<void> {
    const { storage, dbName, collectionName } = this.#ctx;
    for await (const def of storage.find(rollupDefinitionsNamespace(dbName), {
      collection: collectionName,
    })) {
      const name = def.name as string;
      this.#rollups.set(name, this.#stateOf(resolveRollupSpec(name, def.spec, this.#ctx)));
    }
    this.#folded = [...this.#rollups.values()];
  }

  #stateOf(spec: ResolvedRollupSpec): RollupState {
    const { dbName, collectionName } = this.#ctx;
    const ns =
      spec.layout === 'rolling'
        ? `${dbName}.${spec.target}`
        : `${dbName}.${collectionName}.rollup.${spec.name}`;
    return {
      spec,
      ns,
      target: { storage: this.#ctx.storage, counters: this.#counters, ns },
      plan: rollupPlan(spec),
      groups: new GroupCache(spec),
      pool: [],
      stats: {
        measurementsFolded: 0,
        slotsUpdated: 0,
        documentsWritten: 0,
        documentsInitialized: 0,
        writeFailures: 0,
        recomputations: 0,
        measurementsRecomputed: 0,
      },
    };
  }

  /**
   * Enter the gate before preparing a batch (synchronous unless a recomputation runs or waits).
   *
   * @returns the token, or a promise of it.
   */
  enter(): GateToken | Promise<GateToken> {
    return this.#gate.enter();
  }

  /**
   * Leave the gate after the batch's fold (or its failure).
   *
   * @param token - from {@link RollupSet.enter}.
   */
  leave(token: GateToken): void {
    this.#gate.leave(token);
  }

  /** Whether there is no rollup: the commit path then skips the fold. */
  get empty(): boolean {
    return this.#rollups.size === 0;
  }

  /**
   * Fold the batches of one commit round whose bucket writes succeeded into every rollup: one accumulator
   * per touched slot and group, then one write per slot (slots, rolling) or period (calendar) and group
   * for the whole round. Never throws: a failed write marks the slots of its batches for recomputation.
   *
   * @param batches - batches whose bucket writes succeeded (the caller holds the gate and publishes
   *   their results after this fold).
   */
  async fold(batches: ReadonlyArray<WriteBatch>): Promise<void> {
    const rollups = this.#folded;
    if (rollups.length === 0 || batches.length === 0) return;
    // Every rollup's accumulators first, synchronously, then the writes.
    const folds = foldRound(rollups, batches);
    let measurements = 0;
    for (const b of batches) measurements += b.items.length;
    for (let k = 0; k < rollups.length; k++) {
      const r = rollups[k] as RollupState;
      const { groups, accs: accsOf } = folds[k] as RoundFold;
      r.stats.measurementsFolded += measurements;
      for (let g = 0; g < groups.length; g++) {
        // A rollup dropped meanwhile (dropAll does not wait for commits in flight) is not written.
        if (this.#rollups.get(r.spec.name) !== r) break;
        const group = groups[g] as RollupGroup;
        const accs = accsOf[g] as SlotAcc[];
        r.stats.slotsUpdated += accs.length;
        try {
          const counts = await writeGroup(r.target, r.plan, group, accs);
          r.stats.documentsWritten += counts.documents;
          r.stats.documentsInitialized += counts.initialised;
        } catch {
          r.stats.writeFailures++;
          this.#markDirty(r, group, batches);
        }
        releaseSlotAccs(r.pool, accs);
      }
    }
  }

  /** Mark the series of `group` among `batches` for recomputation over their batches' time spans. */
  #markDirty(r: RollupState, group: RollupGroup, batches: ReadonlyArray<WriteBatch>): void {
    for (const b of batches) {
      // By key: the group cache may have made a new object for the group since.
      if (r.groups.get(b.bucket.key.metaKey, b.bucket.normalizedMeta).key !== group.key) continue;
      this.#dirty.push({ meta: b.bucket.normalizedMeta, ...timeSpan(b.items) });
    }
  }

  /**
   * Recompute what failed writes left behind, if anything (before reads).
   *
   * @returns when the rollups are exact.
   */
  async settle(): Promise<void> {
    await this.ready();
    if (this.#dirty.length === 0) return;
    await this.#gate.exclusive(() => this.#recomputeDirty());
  }

  async #recomputeDirty(): Promise<void> {
    if (this.#dirty.length === 0) return;
    const affected = this.#dirty;
    this.#dirty = [];
    try {
      await this.#recompute(affected);
    } catch (error) {
      this.#dirty.push(...affected);
      throw error;
    }
  }

  async #recompute(affected: ReadonlyArray<AffectedSeries>): Promise<void> {
    for (const r of this.#rollups.values()) {
      const counts = await recomputeRollup(this.#recomputeContext(), r.plan, r.target, affected);
      r.stats.recomputations++;
      r.stats.documentsWritten += counts.documents;
      r.stats.measurementsRecomputed += counts.measurements;
    }
  }

  #recomputeContext(onMeasurements?: (n: number) => void): Parameters<typeof recomputeRollup>[0] {
    const { timeField, metaField, raw } = this.#ctx;
    return {
      timeField,
      metaField,
      raw,
      ...(onMeasurements === undefined ? {} : { onMeasurements }),
    };
  }

  /**
   * Run a direct write on buckets (delete, meta update, TTL) and recompute the slots of every bucket it
   * may have changed: each candidate bucket's series before and after the write, over its time range.
   *
   * @param bucketFilter - a filter matching every bucket the write may change (a superset is fine).
   * @param write - the write.
   * @returns what `write` returns.
   */
  async directWrite<T>(bucketFilter: BucketFilter, write: () => Promise<T>): Promise<T> {
    await this.ready();
    return await this.#gate.exclusive(async () => {
      await this.#recomputeDirty();
      if (this.#rollups.size === 0) return await write();
      const before = await this.#readSeries(bucketFilter);
      try {
        return await write();
      } finally {
        const ids = before.map((b) => b.id);
        const after = ids.length === 0 ? [] : await this.#readSeries({ _id: { $in: ids } });
        const affected = [...before, ...after];
        if (affected.length > 0) {
          try {
            await this.#recompute(affected);
          } catch {
            this.#dirty.push(...affected);
          }
        }
      }
    });
  }

  async #readSeries(filter: BucketFilter): Promise<Array<AffectedSeries & { id: unknown }>> {
    const tf = this.#ctx.timeField;
    const projection = { meta: 1, [`control.min.${tf}`]: 1, [`control.max.${tf}`]: 1 } as const;
    const out: Array<AffectedSeries & { id: unknown }> = [];
    for await (const doc of this.#ctx.storage.find(this.#ctx.bucketsNs, filter, { projection })) {
      out.push({ id: doc._id, meta: hasOwnField(doc, 'meta') ? doc.meta : undefined, ...timeRange(doc, tf) });
    }
    return out;
  }

  /**
   * Create a rollup and backfill it from the existing buckets (commits wait meanwhile).
   *
   * @param name - the rollup name.
   * @param raw - its spec.
   * @param options - progress callback.
   * @throws {@link TimeseriesError} `InvalidOptions` for a bad spec or a storage without upserts,
   *   `NamespaceExists` when the name is taken.
   */
  async create(name: string, raw: unknown, options: CreateRollupOptions = {}): Promise<void> {
    await this.ready();
    const spec = resolveRollupSpec(name, raw, this.#ctx);
    const { storage, dbName, collectionName } = this.#ctx;
    if (storage.upsertOne === undefined) {
      throw new TimeseriesError('InvalidOptions', 'this storage does not support rollups (no upsertOne)');
    }
    await this.#gate.exclusive(async () => {
      if (this.#rollups.has(name)) {
        throw new TimeseriesError(
          'NamespaceExists',
          `rollup '${name}' already exists on ${dbName}.${collectionName}`,
        );
      }
      if (spec.layout === 'rolling') {
        for (const other of this.#rollups.values()) {
          if (other.spec.layout === 'rolling' && other.spec.target === spec.target) {
            throw new TimeseriesError(
              'InvalidOptions',
              `rollup '${other.spec.name}' already keeps totals on '${spec.target}'`,
              {
                field: 'target',
              },
            );
          }
        }
      }
      const state = this.#stateOf(spec);
      const defsNs = rollupDefinitionsNamespace(dbName);
      const id = `${collectionName}:${name}`;
      try {
        await storage.insertOne(defsNs, { _id: id, collection: collectionName, name, spec: spec.spec });
      } catch (error) {
        if (TimeseriesError.isTimeseriesError(error) && error.code === ErrorCodes.DuplicateKey) {
          throw new TimeseriesError(
            'NamespaceExists',
            `rollup '${name}' already exists on ${dbName}.${collectionName}`,
          );
        }
        throw error;
      }
      try {
        const report = options.onProgress;
        const counts = await recomputeRollup(
          this.#recomputeContext(
            report === undefined
              ? undefined
              : (n) => {
                  report({ measurements: n, done: false });
                },
          ),
          state.plan,
          state.target,
          'all',
        );
        state.stats.documentsWritten += counts.documents;
        state.stats.measurementsRecomputed += counts.measurements;
        report?.({ measurements: counts.measurements, done: true });
      } catch (error) {
        await storage.deleteMany(defsNs, { _id: id });
        throw error;
      }
      this.#rollups.set(name, state);
      this.#folded = [...this.#rollups.values()];
    });
  }

  /**
   * The collection's rollups.
   *
   * @returns name, spec and namespace of each, by name.
   */
  async list(): Promise<RollupDescription[]> {
    await this.ready();
    return [...this.#rollups.values()]
      .map((r) => Object.freeze({ name: r.spec.name, spec: r.spec.spec, namespace: r.ns }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Drop a rollup: its definition and documents (a rolling rollup's `totals` are unset on the target).
   *
   * @param name - the rollup name.
   * @returns whether it existed.
   */
  async drop(name: string): Promise<boolean> {
    await this.ready();
    return await this.#gate.exclusive(async () => {
      const r = this.#rollups.get(name);
      if (r === undefined) return false;
      await this.#dropState(r);
      return true;
    });
  }

  /**
   * Drop every rollup (the collection is dropped). Does not wait for commits in flight (a drop must not
   * wait for a write stuck in storage): they are forgotten first, so later folds write nothing.
   *
   * @returns when done.
   */
  async dropAll(): Promise<void> {
    await this.ready();
    const all = [...this.#rollups.values()];
    this.#rollups.clear();
    this.#folded = [];
    this.#dirty = [];
    for (const r of all) await this.#dropState(r);
  }

  async #dropState(r: RollupState): Promise<void> {
    const { storage, dbName, collectionName } = this.#ctx;
    await storage.deleteMany(rollupDefinitionsNamespace(dbName), { _id: `${collectionName}:${r.spec.name}` });
    if (r.spec.layout === 'rolling') {
      await storage.updateMany(r.ns, { totals: { $exists: true } }, { $unset: { totals: '' } });
    } else {
      await storage.dropNamespace(r.ns);
    }
    this.#rollups.delete(r.spec.name);
    this.#folded = [...this.#rollups.values()];
  }

  /**
   * The read handle of a rollup.
   *
   * @param name - the rollup name.
   * @returns the handle.
   * @throws {@link TimeseriesError} `NamespaceNotFound` when there is no such rollup.
   */
  async handle(name: string): Promise<RollupHandle> {
    await this.ready();
    const r = this.#rollups.get(name);
    if (r === undefined) {
      throw new TimeseriesError(
        'NamespaceNotFound',
        `rollup '${name}' not found on ${this.#ctx.dbName}.${this.#ctx.collectionName}`,
      );
    }
    return makeRollupHandle({
      storage: this.#ctx.storage,
      clock: this.#ctx.clock,
      spec: r.spec,
      ns: r.ns,
      settle: () => this.settle(),
    });
  }

  /**
   * Counters of every rollup, by name.
   *
   * @returns frozen snapshots.
   */
  stats(): Readonly<Record<string, RollupStats>> {
    const out: Record<string, RollupStats> = Object.create(null) as Record<string, RollupStats>;
    for (const [name, r] of this.#rollups) out[name] = Object.freeze({ ...r.stats });
    return Object.freeze(out);
  }
}

/** Earliest and latest time of a batch's measurements. */
function timeSpan(items: ReadonlyArray<{ readonly timeMs: number }>): { from: number; to: number } {
  let from = Infinity;
  let to = -Infinity;
  for (const item of items) {
    const t = item.timeMs;
    if (t < from) from = t;
    if (t > to) to = t;
  }
  return { from, to };
}

function timeRange(doc: StoredBucket, timeField: string): { from: number; to: number } {
  const control = getOwnField(doc, 'control');
  const bound = (which: 'min' | 'max'): unknown => {
    const side = isPlainObject(control) ? getOwnField(control, which) : undefined;
    return isPlainObject(side) ? getOwnField(side, timeField) : undefined;
  };
  const min = bound('min');
  const max = bound('max');
  return {
    from: min instanceof Date ? min.getTime() : -Infinity,
    to: max instanceof Date ? max.getTime() : Infinity,
  };
}
