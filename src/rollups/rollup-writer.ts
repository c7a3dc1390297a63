/**
 * Dispatch from a rollup's layout to its writer (slots, calendar, rolling): the finest slot of a time,
 * the commit-time write, the range a recomputation must cover, and the rewrite of that range.
 *
 * @packageDocumentation
 */
import type { SlotAcc } from './accumulator.js';
import {
  calendarPaths,
  calendarRange,
  calendarUnitSlot,
  rewriteCalendar,
  writeCalendar,
} from './calendar-writer.js';
import type { CalendarPaths } from './calendar-writer.js';
import type { RollupTarget, WriteCounts } from './counter-writes.js';
import type { RollupGroup } from './group.js';
import { rewriteRolling, rollingUnitSlot, writeRolling } from './rolling-writer.js';
import { kLevelMs, nextSlotStart, slotStart } from './slot-math.js';
import { rewriteSlots, slotRange, slotsPaths, writeSlots } from './slots-writer.js';
import type { SlotsPaths } from './slots-writer.js';
import type { ResolvedRollingSpec, ResolvedRollupSpec } from './spec.js';

/**
 * What a rollup's writes reuse from one commit to the next, built once per rollup: the spec and, for the
 * counter layouts, the split paths of their counters (a rolling rollup writes update pipelines).
 */
export type RollupPlan =
  SlotsPaths | CalendarPaths | { readonly layout: 'rolling'; readonly spec: ResolvedRollingSpec };

/**
 * The write plan of a rollup.
 *
 * @param spec - the rollup.
 * @returns its plan.
 */
export function rollupPlan(spec: ResolvedRollupSpec): RollupPlan {
  switch (spec.layout) {
    case 'slots':
      return slotsPaths(spec);
    case 'calendar':
      return calendarPaths(spec);
    case 'rolling':
      return { layout: 'rolling', spec };
    default: {
      const never: never = spec;
      throw new TypeError(`unknown layout ${String(never)}`);
    }
  }
}

/**
 * The finest slot of a time under a rollup (the key of its accumulators).
 *
 * @param spec - the rollup.
 * @param ms - a time.
 * @returns the slot start.
 */
export function unitSlot(spec: ResolvedRollupSpec, ms: number): number {
  switch (spec.layout) {
    case 'slots':
      return slotStart(ms, spec.every);
    case 'calendar':
      return calendarUnitSlot(spec, ms);
    case 'rolling':
      return rollingUnitSlot(spec, ms);
    default: {
      const never: never = spec;
      throw new TypeError(`unknown layout ${String(never)}`);
    }
  }
}

/**
 * The end (exclusive) of the finest slot starting at `start`.
 *
 * @param spec - the rollup.
 * @param start - a slot start from {@link unitSlot}.
 * @returns the next slot's start.
 */
export function unitSlotEnd(spec: ResolvedRollupSpec, start: number): number {
  switch (spec.layout) {
    case 'slots':
      return nextSlotStart(start, spec.every);
    case 'calendar':
      return start + kLevelMs[spec.levels[spec.levels.length - 1] as 'day' | 'hour' | 'minute'];
    case 'rolling':
      return start + spec.stepMs;
    default: {
      const never: never = spec;
      throw new TypeError(`unknown layout ${String(never)}`);
    }
  }
}

/**
 * Add one group's accumulators of a commit.
 *
 * @param target - storage, counter writes and namespace.
 * @param plan - the rollup's plan.
 * @param group - the group.
 * @param accs - the touched slots.
 * @returns what was written.
 */
export function writeGroup(
  target: RollupTarget,
  plan: RollupPlan,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<WriteCounts> {
  // No async frame of its own: the layout writer's promise (one per touched group and commit round).
  switch (plan.layout) {
    case 'slots':
      return writeSlots(target, plan, group, accs);
    case 'calendar':
      return writeCalendar(target, plan, group, accs);
    case 'rolling':
      return writeRolling(target.storage, target.ns, plan.spec, group, accs).then((documents) => ({
        documents,
        initialised: 0,
      }));
    default: {
      const never: never = plan;
      throw new TypeError(`unknown layout ${String(never)}`);
    }
  }
}

/**
 * The time range a recomputation of `[from, to]` must read and rewrite: whole slots, whole periods, or
 * (rolling: the window depends on the latest step) all time.
 *
 * @param spec - the rollup.
 * @param from - earliest affected time.
 * @param to - latest affected time (inclusive).
 * @returns `[start, end)`.
 */
export function recomputeRange(spec: ResolvedRollupSpec, from: number, to: number): [number, number] {
  switch (spec.layout) {
    case 'slots':
      return slotRange(spec, from, to);
    case 'calendar':
      return calendarRange(spec, from, to);
    case 'rolling':
      return [-Infinity, Infinity];
    default: {
      const never: never = spec;
      throw new TypeError(`unknown layout ${String(never)}`);
    }
  }
}

/**
 * Replace one group's documents in a recomputed range.
 *
 * @param target - storage, counter writes and namespace.
 * @param plan - the rollup's plan.
 * @param group - the group.
 * @param range - from {@link recomputeRange}.
 * @param accs - the slots recomputed from the buckets in that range.
 * @returns documents written.
 */
export async function rewriteGroup(
  target: RollupTarget,
  plan: RollupPlan,
  group: RollupGroup,
  range: readonly [number, number],
  accs: ReadonlyArray<SlotAcc>,
): Promise<number> {
  switch (plan.layout) {
    case 'slots':
      return await rewriteSlots(target, plan, group, range[0], range[1], accs);
    case 'calendar':
      return await rewriteCalendar(target, plan, group, range[0], range[1], accs);
    case 'rolling':
      return await rewriteRolling(target.storage, target.ns, plan.spec, group, accs);
    default: {
      const never: never = plan;
      throw new TypeError(`unknown layout ${String(never)}`);
    }
  }
}
