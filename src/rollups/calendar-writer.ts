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
import type { CounterOperator, CounterUpdate, FieldPath } from '../storage/counter-update.js';
import type { StoredBucket } from '../storage/storage.js';
import { defineField } from '../util/safe-record.js';
import type { FieldAcc, SlotAcc } from './accumulator.js';
import type { RollupTarget, WriteCounts } from './counter-writes.js';
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

/** The counter paths of one node of a calendar document (the top, a day, an hour, a minute). */
interface NodePaths {
  /** The node's path (`[]` for the top, `['days', 3, 'hours', 5]`). */
  readonly prefix: FieldPath;
  /** Its counters: `count`, then each field's `count` and `sum`. */
  readonly counters: ReadonlyArray<FieldPath>;
}

/** Cached nodes per level are dropped past this many (a month has 44 640 minutes). */
const kMaxCachedNodes = 4096;

/**
 * The counter paths of a calendar rollup: the top's, built once, and each level's nodes, built on first
 * use and shared by every group (all groups' commits touch the same few slots). Plain data with caches.
 */
export interface CalendarPaths {
  readonly layout: 'calendar';
  readonly spec: ResolvedCalendarSpec;
  readonly top: NodePaths;
  /** Per level, its nodes by position in the period (in units of the level). */
  readonly nodes: ReadonlyArray<Map<number, NodePaths>>;
  /** `$inc` for every path (shared; grown to the longest update). */
  readonly operators: CounterOperator[];
  /** The period of the last slot looked up, `[start, end)` (the next slot is most likely in it). */
  periodStart: number;
  periodEnd: number;
}

/**
 * The counter paths of a calendar rollup.
 *
 * @param spec - the rollup.
 * @returns its paths (empty caches).
 */
export function calendarPaths(spec: ResolvedCalendarSpec): CalendarPaths {
  return {
    layout: 'calendar',
    spec,
    top: nodePaths(spec, []),
    nodes: spec.levels.map(() => new Map<number, NodePaths>()),
    operators: [],
    periodStart: 0,
    periodEnd: 0,
  };
}

function nodePaths(spec: ResolvedCalendarSpec, prefix: FieldPath): NodePaths {
  const counters: FieldPath[] = [[...prefix, 'count']];
  for (const f of spec.fields) counters.push([...prefix, f.name, 'count'], [...prefix, f.name, 'sum']);
  return { prefix, counters };
}

/**
 * Start of the calendar period holding `ms`, through the cache of the last period.
 *
 * @param paths - the rollup's paths (its period cache is updated).
 * @param ms - a time.
 * @returns the period start.
 */
function calendarPeriodOf(paths: CalendarPaths, ms: number): number {
  if (ms >= paths.periodStart && ms < paths.periodEnd) return paths.periodStart;
  const start = periodStart(ms, paths.spec.period);
  paths.periodStart = start;
  paths.periodEnd = periodEnd(start, paths.spec.period);
  return start;
}

/**
 * The `$inc` of one period document for the slots of one commit: the period's counters and, for each
 * slot, the counters of every level on its positional path (increments of the same path added up in
 * order; a field's increments of zero are left out: the skeleton holds zeros).
 *
 * @param paths - the rollup's paths (node caches are filled).
 * @param period - the period start.
 * @param accs - finest-level slots inside the period.
 * @returns the counter update; as a document:
 * @example
 * ```ts
 * // 2015-08-01T00:06 in a month document with levels day/hour/minute:
 * // { $inc: { count: 1, 'days.0.count': 1, 'days.0.hours.0.count': 1, 'days.0.hours.0.minutes.6.count': 1 } }
 * ```
 */
export function calendarCounters(
  paths: CalendarPaths,
  period: number,
  accs: ReadonlyArray<SlotAcc>,
): CounterUpdate {
  const out: FieldPath[] = [];
  const values: number[] = [];
  // One slot (the common case) has no path twice: nothing to look up.
  const merge = accs.length > 1;
  const levels = paths.spec.levels;
  for (const acc of accs) {
    addNode(out, values, paths.top, acc, merge);
    let node = paths.top;
    let levelStart = period;
    for (let l = 0; l < levels.length; l++) {
      const level = levels[l] as 'day' | 'hour' | 'minute';
      const width = kLevelMs[level];
      const index = Math.floor((acc.start - levelStart) / width);
      levelStart += index * width;
      node = childNode(paths, l, node, level, index, (levelStart - period) / width);
      addNode(out, values, node, acc, merge);
    }
  }
  while (paths.operators.length < out.length) paths.operators.push('$inc');
  return { paths: out, operators: paths.operators, values };
}

/** The node at `index` of level `l` under `parent`, from the cache by its position in the period. */
function childNode(
  paths: CalendarPaths,
  l: number,
  parent: NodePaths,
  level: 'day' | 'hour' | 'minute',
  index: number,
  position: number,
): NodePaths {
  const cache = paths.nodes[l] as Map<number, NodePaths>;
  let node = cache.get(position);
  if (node === undefined) {
    if (cache.size >= kMaxCachedNodes) cache.clear();
    node = nodePaths(paths.spec, [...parent.prefix, kLevelArray[level], index]);
    cache.set(position, node);
  }
  return node;
}

/** Add a slot's counters at a node: to the path's value when `merge` finds it already there. */
function addNode(out: FieldPath[], values: number[], node: NodePaths, acc: SlotAcc, merge: boolean): void {
  const counters = node.counters;
  add(out, values, counters[0] as FieldPath, acc.count, merge);
  for (let i = 0; i < acc.fields.length; i++) {
    const a = acc.fields[i] as FieldAcc;
    if (a.count === 0) continue;
    add(out, values, counters[1 + 2 * i] as FieldPath, a.count, merge);
    add(out, values, counters[2 + 2 * i] as FieldPath, a.sum, merge);
  }
}

function add(out: FieldPath[], values: number[], path: FieldPath, value: number, merge: boolean): void {
  const at = merge ? out.indexOf(path) : -1;
  // `0 +`: the first increment of a path is added to zero, as the sum of one value is (-0 becomes 0).
  if (at < 0) {
    out.push(path);
    values.push(0 + value);
  } else {
    values[at] = (values[at] as number) + value;
  }
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
 * @param target - storage, counter writes and namespace.
 * @param paths - the rollup's paths.
 * @param group - the group.
 * @param accs - finest-level slots.
 * @returns documents written and initialised.
 */
export function writeCalendar(
  target: RollupTarget,
  paths: CalendarPaths,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<WriteCounts> {
  if (accs.length === 0) return Promise.resolve(kNothingWritten);
  const first = calendarPeriodOf(paths, (accs[0] as SlotAcc).start);
  let onePeriod = true;
  for (let i = 1; i < accs.length && onePeriod; i++) {
    onePeriod = calendarPeriodOf(paths, (accs[i] as SlotAcc).start) === first;
  }
  // The common case, every slot in one period: the write's promise, without an async function's own.
  if (onePeriod) return writePeriod(target, paths, group, first, accs).then(countOf);
  return writePeriods(target, paths, group, accs);
}

async function writePeriods(
  target: RollupTarget,
  paths: CalendarPaths,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<WriteCounts> {
  const byPeriod = new Map<number, SlotAcc[]>();
  for (const acc of accs) {
    const period = calendarPeriodOf(paths, acc.start);
    const list = byPeriod.get(period);
    if (list === undefined) byPeriod.set(period, [acc]);
    else list.push(acc);
  }
  let initialised = 0;
  for (const [period, list] of byPeriod) {
    if ((await writePeriod(target, paths, group, period, list)) === 'initialised') initialised++;
  }
  return { documents: byPeriod.size, initialised };
}

/** One period document's three-step write. */
function writePeriod(
  target: RollupTarget,
  paths: CalendarPaths,
  group: RollupGroup,
  period: number,
  accs: ReadonlyArray<SlotAcc>,
): Promise<ThreeStepOutcome> {
  return threeStepWrite(target, slotDocumentId(group, period), calendarCounters(paths, period, accs), () =>
    calendarSkeleton(paths.spec, group, period),
  );
}

const kNothingWritten: WriteCounts = Object.freeze({ documents: 0, initialised: 0 });
const kUpdated: WriteCounts = Object.freeze({ documents: 1, initialised: 0 });
const kInitialised: WriteCounts = Object.freeze({ documents: 1, initialised: 1 });

function countOf(outcome: ThreeStepOutcome): WriteCounts {
  return outcome === 'initialised' ? kInitialised : kUpdated;
}

/**
 * Replace a group's period documents in `[from, to)` (period-aligned) by the given slots.
 *
 * @param target - storage, counter writes and namespace.
 * @param paths - the rollup's paths.
 * @param group - the group.
 * @param from - first period start.
 * @param to - end (a period start, exclusive).
 * @param accs - the recomputed finest-level slots in the range.
 * @returns the number of documents written.
 */
export async function rewriteCalendar(
  target: RollupTarget,
  paths: CalendarPaths,
  group: RollupGroup,
  from: number,
  to: number,
  accs: ReadonlyArray<SlotAcc>,
): Promise<number> {
  await target.storage.deleteMany(target.ns, groupRangeFilter(group, from, to));
  return (await writeCalendar(target, paths, group, accs)).documents;
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
