/**
 * The calendar layout: one document per group and period (UTC month or day) whose nested slots
 * (`days[]`, `hours[]`, `minutes[]`) are pre-allocated with zero counters, updated in place by one `$inc`
 * over positional paths per touched period and commit, created by the three-step initialisation.
 *
 * Document: `{ _id: '<group key>:<period ms>', group, start, count, <field>: {count, sum},
 * days: [{ start, count, <field>: {count, sum}, hours: [...] }] }` (docs/rollups.md).
 *
 * @packageDocumentation
 */
import type { Storage, StoredBucket } from '../storage/storage.js';
import { defineField } from '../util/safe-record.js';
import type { SlotAcc } from './accumulator.js';
import type { RollupGroup } from './group.js';
import { kLevelMs, periodEnd, periodStart } from './slot-math.js';
import { groupRangeFilter, slotDocumentId } from './slots-writer.js';
import type { ResolvedCalendarSpec } from './spec.js';
import { threeStepWrite } from './three-step-write.js';
import type { ThreeStepOutcome } from './three-step-write.js';

/** Array field of each level. */
const kLevelArray = { day: 'days', hour: 'hours', minute: 'minutes' } as const;

/**
 * Start of the finest level's slot holding `ms`.
 *
 * @param spec - the rollup.
 * @param ms - a time.
 * @returns the slot start.
 */
export function calendarUnitSlot(spec: ResolvedCalendarSpec, ms: number): number {
  const finest = spec.levels[spec.levels.length - 1] as 'day' | 'hour' | 'minute';
  const width = kLevelMs[finest];
  return ms - (((ms % width) + width) % width);
}

/**
 * The `$inc` of one period document for the slots of one commit: the period's counters and, for each
 * slot, the counters of every level on its positional path.
 *
 * @param spec - the rollup.
 * @param period - the period start.
 * @param accs - finest-level slots inside the period.
 * @returns `{ $inc: {...} }`.
 * @example
 * ```ts
 * // 2015-08-01T00:06 in a month document with levels day/hour/minute:
 * // { $inc: { count: 1, 'days.0.count': 1, 'days.0.hours.0.count': 1, 'days.0.hours.0.minutes.6.count': 1 } }
 * ```
 */
export function calendarUpdate(
  spec: ResolvedCalendarSpec,
  period: number,
  accs: ReadonlyArray<SlotAcc>,
): Record<string, unknown> {
  // Keys are fixed words, array indexes and field names checked at spec time (never an Object.prototype
  // name), so a plain object is safe; increments of zero are left out (the skeleton holds zeros).
  const inc: Record<string, number> = {};
  const fields = spec.fields;
  const add = (path: string, acc: SlotAcc): void => {
    inc[`${path}count`] = (inc[`${path}count`] ?? 0) + acc.count;
    for (let i = 0; i < fields.length; i++) {
      const a = acc.fields[i] as { count: number; sum: number };
      if (a.count === 0) continue;
      const name = (fields[i] as { name: string }).name;
      inc[`${path}${name}.count`] = (inc[`${path}${name}.count`] ?? 0) + a.count;
      inc[`${path}${name}.sum`] = (inc[`${path}${name}.sum`] ?? 0) + a.sum;
    }
  };
  for (const acc of accs) {
    add('', acc);
    let path = '';
    let levelStart = period;
    for (const level of spec.levels) {
      const index = Math.floor((acc.start - levelStart) / kLevelMs[level]);
      levelStart += index * kLevelMs[level];
      path += `${kLevelArray[level]}.${index}.`;
      add(path, acc);
    }
  }
  return { $inc: inc };
}

/**
 * The zero-filled document of one group and period.
 *
 * @param spec - the rollup.
 * @param group - the group.
 * @param period - the period start.
 * @returns the skeleton.
 */
export function calendarSkeleton(
  spec: ResolvedCalendarSpec,
  group: RollupGroup,
  period: number,
): StoredBucket {
  const doc: StoredBucket = {
    _id: slotDocumentId(group, period),
    group: group.value,
    start: new Date(period),
  };
  fillCounters(spec, doc);
  fillLevel(spec, doc, 0, period, periodEnd(period, spec.period));
  return doc;
}

function fillCounters(spec: ResolvedCalendarSpec, node: Record<string, unknown>): void {
  node.count = 0;
  for (const f of spec.fields) defineField(node, f.name, { count: 0, sum: 0 });
}

function fillLevel(
  spec: ResolvedCalendarSpec,
  node: Record<string, unknown>,
  depth: number,
  start: number,
  end: number,
): void {
  const level = spec.levels[depth];
  if (level === undefined) return;
  const children: Array<Record<string, unknown>> = [];
  for (let t = start; t < end; t += kLevelMs[level]) {
    const child: Record<string, unknown> = { start: new Date(t) };
    fillCounters(spec, child);
    fillLevel(spec, child, depth + 1, t, t + kLevelMs[level]);
    children.push(child);
  }
  node[kLevelArray[level]] = children;
}

/**
 * Add a group's slots of one commit: one three-step write per touched period.
 *
 * @param storage - the storage.
 * @param ns - the rollup's namespace.
 * @param spec - the rollup.
 * @param group - the group.
 * @param accs - finest-level slots.
 * @returns the outcome of each period write.
 */
export async function writeCalendar(
  storage: Storage,
  ns: string,
  spec: ResolvedCalendarSpec,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<ThreeStepOutcome[]> {
  const byPeriod = new Map<number, SlotAcc[]>();
  for (const acc of accs) {
    const period = periodStart(acc.start, spec.period);
    const list = byPeriod.get(period);
    if (list === undefined) byPeriod.set(period, [acc]);
    else list.push(acc);
  }
  const outcomes: ThreeStepOutcome[] = [];
  for (const [period, list] of byPeriod) {
    outcomes.push(
      await threeStepWrite(
        storage,
        ns,
        slotDocumentId(group, period),
        calendarUpdate(spec, period, list),
        () => calendarSkeleton(spec, group, period),
      ),
    );
  }
  return outcomes;
}

/**
 * Replace a group's period documents in `[from, to)` (period-aligned) by the given slots.
 *
 * @param storage - the storage.
 * @param ns - the rollup's namespace.
 * @param spec - the rollup.
 * @param group - the group.
 * @param from - first period start.
 * @param to - end (a period start, exclusive).
 * @param accs - the recomputed finest-level slots in the range.
 * @returns the number of documents written.
 */
export async function rewriteCalendar(
  storage: Storage,
  ns: string,
  spec: ResolvedCalendarSpec,
  group: RollupGroup,
  from: number,
  to: number,
  accs: ReadonlyArray<SlotAcc>,
): Promise<number> {
  await storage.deleteMany(ns, groupRangeFilter(group, from, to));
  return (await writeCalendar(storage, ns, spec, group, accs)).length;
}

/**
 * The range widened to whole periods.
 *
 * @param spec - the rollup.
 * @param from - range start.
 * @param to - time of the last measurement in the range.
 * @returns period-aligned `[start, end)`.
 */
export function calendarRange(spec: ResolvedCalendarSpec, from: number, to: number): [number, number] {
  return [periodStart(from, spec.period), periodEnd(periodStart(to, spec.period), spec.period)];
}
