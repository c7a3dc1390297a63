/**
 * Dispatch from a rollup's layout to its writer (slots, calendar, rolling): the finest slot of a time,
 * the commit-time write, the range a recomputation must cover, and the rewrite of that range.
 *
 * @packageDocumentation
 */
import type { Storage } from '../storage/storage.js';
import type { SlotAcc } from './accumulator.js';
import { calendarRange, calendarUnitSlot, rewriteCalendar, writeCalendar } from './calendar-writer.js';
import type { RollupGroup } from './group.js';
import { rewriteRolling, rollingUnitSlot, writeRolling } from './rolling-writer.js';
import { slotStart } from './slot-math.js';
import { rewriteSlots, slotRange, writeSlots } from './slots-writer.js';
import type { ResolvedRollupSpec } from './spec.js';

/** What one commit-time write did. */
export interface WriteCounts {
  /** Documents updated or inserted. */
  readonly documents: number;
  /** Calendar documents this writer initialised (three-step, step 2 succeeded). */
  readonly initialised: number;
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
 * Add one group's accumulators of a commit.
 *
 * @param storage - the storage.
 * @param ns - the rollup's namespace.
 * @param spec - the rollup.
 * @param group - the group.
 * @param accs - the touched slots.
 * @returns what was written.
 */
export async function writeGroup(
  storage: Storage,
  ns: string,
  spec: ResolvedRollupSpec,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<WriteCounts> {
  switch (spec.layout) {
    case 'slots':
      return { documents: await writeSlots(storage, ns, spec, group, accs), initialised: 0 };
    case 'calendar': {
      const outcomes = await writeCalendar(storage, ns, spec, group, accs);
      return { documents: outcomes.length, initialised: outcomes.filter((o) => o === 'initialised').length };
    }
    case 'rolling':
      return { documents: await writeRolling(storage, ns, spec, group, accs), initialised: 0 };
    default: {
      const never: never = spec;
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
 * @param storage - the storage.
 * @param ns - the rollup's namespace.
 * @param spec - the rollup.
 * @param group - the group.
 * @param range - from {@link recomputeRange}.
 * @param accs - the slots recomputed from the buckets in that range.
 * @returns documents written.
 */
export async function rewriteGroup(
  storage: Storage,
  ns: string,
  spec: ResolvedRollupSpec,
  group: RollupGroup,
  range: readonly [number, number],
  accs: ReadonlyArray<SlotAcc>,
): Promise<number> {
  switch (spec.layout) {
    case 'slots':
      return await rewriteSlots(storage, ns, spec, group, range[0], range[1], accs);
    case 'calendar':
      return await rewriteCalendar(storage, ns, spec, group, range[0], range[1], accs);
    case 'rolling':
      return await rewriteRolling(storage, ns, spec, group, accs);
    default: {
      const never: never = spec;
      throw new TypeError(`unknown layout ${String(never)}`);
    }
  }
}
