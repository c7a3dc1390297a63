/**
 * Recomputation of rollup documents from the buckets: after a delete, a meta update, a TTL pass or a
 * failed rollup write, the affected slots of each affected group are read again from the raw
 * measurements and their documents replaced. A backfill is the recomputation of everything.
 *
 * Callers hold the collection's rollup gate exclusively, so no commit is between its bucket write and its
 * rollup write while the buckets are read.
 *
 * @packageDocumentation
 */
import { defineField } from '../util/safe-record.js';
import { foldMeasurement, makeSlotAcc } from './accumulator.js';
import type { SlotAcc } from './accumulator.js';
import type { RollupTarget } from './counter-writes.js';
import { groupOf } from './group.js';
import type { RollupGroup } from './group.js';
import { recomputeRange, rewriteGroup, unitSlot } from './rollup-writer.js';
import type { RollupPlan } from './rollup-writer.js';
import type { ResolvedRollupSpec } from './spec.js';

/** A series whose measurements in `[from, to]` may have changed (a bucket's meta and time range). */
export interface AffectedSeries {
  /** The series' normalised meta (`undefined`: none). */
  readonly meta: unknown;
  /** Earliest and latest affected time, epoch ms (inclusive). */
  readonly from: number;
  readonly to: number;
}

/** Reads raw measurements (the collection's `find`). */
export type RawSource = (filter: Readonly<Record<string, unknown>>) => AsyncIterable<Record<string, unknown>>;

/** What a recomputation needs to know about the collection. */
export interface RecomputeContext {
  readonly timeField: string;
  readonly metaField: string | undefined;
  readonly raw: RawSource;
  /** Called after every 1 000 measurements read (backfill progress). */
  readonly onMeasurements?: (n: number) => void;
}

/** Counts of one recomputation. */
export interface RecomputeCounts {
  /** Raw measurements read. */
  readonly measurements: number;
  /** Documents written. */
  readonly documents: number;
}

/**
 * Recompute the given series' slots (or, with `'all'`, every document) of one rollup.
 *
 * @param ctx - fields and raw reader.
 * @param plan - the rollup's plan.
 * @param target - where the rollup writes.
 * @param affected - the affected series, or `'all'`.
 * @returns the counts.
 */
export async function recomputeRollup(
  ctx: RecomputeContext,
  plan: RollupPlan,
  target: RollupTarget,
  affected: ReadonlyArray<AffectedSeries> | 'all',
): Promise<RecomputeCounts> {
  if (affected === 'all') return await recomputeAll(ctx, plan, target);
  const spec = plan.spec;
  // Ranges per group, widened to whole slots (periods, windows) and merged.
  const byGroup = new Map<string, { group: RollupGroup; ranges: Array<[number, number]> }>();
  for (const series of affected) {
    const group = groupOf(spec, series.meta);
    let entry = byGroup.get(group.key);
    if (entry === undefined) {
      entry = { group, ranges: [] };
      byGroup.set(group.key, entry);
    }
    entry.ranges.push(recomputeRange(spec, series.from, series.to));
  }
  let measurements = 0;
  let documents = 0;
  for (const { group, ranges } of byGroup.values()) {
    for (const range of mergeRanges(ranges)) {
      const accs = new Map<number, SlotAcc>();
      for await (const doc of ctx.raw(rawFilter(ctx, spec, group, range))) {
        if (ctx.metaField !== undefined && groupOf(spec, doc[ctx.metaField]).key !== group.key) continue;
        measurements++;
        foldInto(accs, spec, doc, ctx.timeField);
      }
      documents += await rewriteGroup(target, plan, group, range, [...accs.values()]);
    }
  }
  return { measurements, documents };
}

async function recomputeAll(
  ctx: RecomputeContext,
  plan: RollupPlan,
  target: RollupTarget,
): Promise<RecomputeCounts> {
  const { spec } = plan;
  const { storage, ns } = target;
  const groups = new Map<string, { group: RollupGroup; accs: Map<number, SlotAcc> }>();
  let measurements = 0;
  for await (const doc of ctx.raw({})) {
    const group = groupOf(spec, ctx.metaField === undefined ? undefined : doc[ctx.metaField]);
    let entry = groups.get(group.key);
    if (entry === undefined) {
      entry = { group, accs: new Map() };
      groups.set(group.key, entry);
    }
    foldInto(entry.accs, spec, doc, ctx.timeField);
    if (++measurements % 1000 === 0) ctx.onMeasurements?.(measurements);
  }
  ctx.onMeasurements?.(measurements);
  if (spec.layout === 'rolling') {
    await storage.updateMany(ns, { totals: { $exists: true } }, { $set: { totals: [] } });
  } else {
    await storage.deleteMany(ns, {});
  }
  let documents = 0;
  const all: [number, number] = [-Infinity, Infinity];
  for (const { group, accs } of groups.values()) {
    documents += await rewriteGroup(target, plan, group, all, [...accs.values()]);
  }
  return { measurements, documents };
}

function foldInto(
  accs: Map<number, SlotAcc>,
  spec: ResolvedRollupSpec,
  doc: Readonly<Record<string, unknown>>,
  timeField: string,
): void {
  const t = (doc[timeField] as Date).getTime();
  const slot = unitSlot(spec, t);
  let acc = accs.get(slot);
  if (acc === undefined) {
    acc = makeSlotAcc(slot, spec.fields.length);
    accs.set(slot, acc);
  }
  foldMeasurement(acc, doc, t, spec.fields);
}

/** The raw measurements of a group in a range (a superset: callers check each measurement's group). */
function rawFilter(
  ctx: RecomputeContext,
  spec: ResolvedRollupSpec,
  group: RollupGroup,
  range: readonly [number, number],
): Record<string, unknown> {
  const filter: Record<string, unknown> = {};
  const time: Record<string, unknown> = {};
  if (Number.isFinite(range[0])) time.$gte = new Date(range[0]);
  if (Number.isFinite(range[1])) time.$lt = new Date(range[1]);
  if (Object.keys(time).length > 0) defineField(filter, ctx.timeField, time);
  // A null group value is also that of a path through an array (not traversed, see group.ts), which
  // `{$eq: null}` would not select: the time range alone then, the caller keeping the group's own.
  if (spec.groupBy.length === 1 && !spec.groupIsDocument) {
    if (group.value !== null)
      defineField(filter, (spec.groupBy[0] as { path: string }).path, { $eq: group.value });
  } else if (spec.groupIsDocument) {
    const value = group.value as Record<string, unknown>;
    for (const path of spec.groupBy) {
      if (value[path.name] !== null) defineField(filter, path.path, { $eq: value[path.name] });
    }
  }
  return filter;
}

function mergeRanges(ranges: Array<[number, number]>): Array<[number, number]> {
  ranges.sort((a, b) => a[0] - b[0]);
  const out: Array<[number, number]> = [];
  for (const r of ranges) {
    const last = out[out.length - 1];
    if (last !== undefined && r[0] <= last[1]) last[1] = Math.max(last[1], r[1]);
    else out.push([r[0], r[1]]);
  }
  return out;
}
