/**
 * The slots layout (the bucket pattern with pre-aggregates): one document per group and slot, written
 * with one upsert per touched slot and commit, whose `$inc`/`$min`/`$max` make concurrent writers of the
 * same slot (other processes on MongoDB) add up exactly.
 *
 * Document: `{ _id: '<group key>:<slot ms>', group, start, count, <field>: { count, sum, min, max,
 * first: {t, v}, last: {t, v} } }` (docs/rollups.md).
 *
 * @packageDocumentation
 */
import type { CounterOperator, CounterUpdate, FieldPath } from '../storage/counter-update.js';
import type { Storage } from '../storage/storage.js';
import type { FieldAcc, SlotAcc } from './accumulator.js';
import type { CounterWriteResult, RollupTarget, WriteCounts } from './counter-writes.js';
import type { RollupGroup } from './group.js';
import { nextSlotStart, slotStart } from './slot-math.js';
import type { ResolvedField, ResolvedSlotsSpec } from './spec.js';

/**
 * The `_id` of a slot document: the group key and the slot start (no hashing: the key is the group's
 * cached hex). The group keeps the last id it built (most commits of a series write the same slot).
 *
 * @param group - the group.
 * @param start - slot start, epoch ms.
 * @returns the id.
 */
export function slotDocumentId(group: RollupGroup, start: number): string {
  if (group.lastIdStart === start) return group.lastId as string;
  const id = `${group.key}:${start}`;
  group.lastId = id;
  group.lastIdStart = start;
  return id;
}

/**
 * The counter paths of a slots rollup, built once per rollup: `count`, then for each field `count`,
 * `sum` and the kept `min`, `max`, `first`, `last`.
 */
export interface SlotsPaths {
  readonly layout: 'slots';
  readonly spec: ResolvedSlotsSpec;
  readonly paths: ReadonlyArray<FieldPath>;
  readonly operators: ReadonlyArray<CounterOperator>;
}

/**
 * The counter paths of a slots rollup.
 *
 * @param spec - the rollup.
 * @returns its paths.
 */
export function slotsPaths(spec: ResolvedSlotsSpec): SlotsPaths {
  const paths: FieldPath[] = [['count']];
  const operators: CounterOperator[] = ['$inc'];
  for (const f of spec.fields) {
    paths.push([f.name, 'count'], [f.name, 'sum']);
    operators.push('$inc', '$inc');
    if (f.min) {
      paths.push([f.name, 'min']);
      operators.push('$min');
    }
    if (f.max) {
      paths.push([f.name, 'max']);
      operators.push('$max');
    }
    if (f.first) {
      paths.push([f.name, 'first']);
      operators.push('$min');
    }
    if (f.last) {
      paths.push([f.name, 'last']);
      operators.push('$max');
    }
  }
  return Object.freeze({ layout: 'slots', spec, paths, operators });
}

/**
 * The upsert that adds one slot accumulator to its document: `$setOnInsert` of the group and start,
 * `$inc` of the counts and sums, `$min`/`$max` of the kept extremes (left out for a field without a
 * numeric value in the slot). Its update document (`counterUpdateDocument`) is the documented one, below.
 *
 * @param paths - the rollup's paths.
 * @param group - the group.
 * @param acc - the slot's accumulator.
 * @returns the counter update (its paths are the rollup's, shared).
 * @example
 * ```ts
 * // { $setOnInsert: { group: 'a', start: ISODate(...) }, $inc: { count: 3, 'temp.count': 3, 'temp.sum': 64.5 },
 * //   $min: { 'temp.min': 21, 'temp.first': { t: ISODate(...), v: 21.5 } }, $max: { ... } }
 * ```
 */
export function slotCounters(paths: SlotsPaths, group: RollupGroup, acc: SlotAcc): CounterUpdate {
  const fields = paths.spec.fields;
  const values = new Array<unknown>(paths.paths.length);
  values[0] = acc.count;
  let v = 1;
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i] as ResolvedField;
    const a = acc.fields[i] as FieldAcc;
    values[v++] = a.count;
    values[v++] = a.sum;
    const some = a.count > 0;
    if (f.min) values[v++] = some ? a.min : undefined;
    if (f.max) values[v++] = some ? a.max : undefined;
    if (f.first) values[v++] = some ? { t: new Date(a.firstT), v: a.firstV } : undefined;
    if (f.last) values[v++] = some ? { t: new Date(a.lastT), v: a.lastV } : undefined;
  }
  return {
    setOnInsert: slotSetOnInsert(group, acc.start),
    paths: paths.paths,
    operators: paths.operators,
    values,
  };
}

/**
 * The `$setOnInsert` fields of a slot document (shared by the commits to one slot: never changed).
 *
 * @param group - the group (its last fields are cached on it).
 * @param start - the slot start.
 * @returns `{ group, start }`.
 */
function slotSetOnInsert(group: RollupGroup, start: number): Readonly<Record<string, unknown>> {
  if (group.lastSetOnInsertStart === start) return group.lastSetOnInsert as Readonly<Record<string, unknown>>;
  const fields = Object.freeze({ group: group.value, start: new Date(start) });
  group.lastSetOnInsert = fields;
  group.lastSetOnInsertStart = start;
  return fields;
}

/**
 * Add a group's slot accumulators of one commit: one upsert per slot.
 *
 * @param target - storage, counter writes and namespace.
 * @param paths - the rollup's paths.
 * @param group - the group.
 * @param accs - the touched slots.
 * @returns the documents written.
 */
export function writeSlots(
  target: RollupTarget,
  paths: SlotsPaths,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<WriteCounts> {
  // The common case, one slot: the storage's promise, without an async function's own.
  if (accs.length === 1) return upsertSlot(target, paths, group, accs[0] as SlotAcc).then(oneDocument);
  return upsertSlots(target, paths, group, accs);
}

function upsertSlot(
  target: RollupTarget,
  paths: SlotsPaths,
  group: RollupGroup,
  acc: SlotAcc,
): Promise<CounterWriteResult> {
  return target.counters.upsert(target.ns, slotDocumentId(group, acc.start), slotCounters(paths, group, acc));
}

async function upsertSlots(
  target: RollupTarget,
  paths: SlotsPaths,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<WriteCounts> {
  for (const acc of accs) await upsertSlot(target, paths, group, acc);
  return { documents: accs.length, initialised: 0 };
}

const kOneDocument: WriteCounts = Object.freeze({ documents: 1, initialised: 0 });

function oneDocument(): WriteCounts {
  return kOneDocument;
}

/**
 * Replace a group's slot documents in `[from, to)` (slot-aligned) by the given accumulators.
 *
 * @param target - storage, counter writes and namespace.
 * @param paths - the rollup's paths.
 * @param group - the group.
 * @param from - first slot start.
 * @param to - end (a slot start, exclusive).
 * @param accs - the recomputed slots in the range.
 * @returns the number of documents written.
 */
export async function rewriteSlots(
  target: RollupTarget,
  paths: SlotsPaths,
  group: RollupGroup,
  from: number,
  to: number,
  accs: ReadonlyArray<SlotAcc>,
): Promise<number> {
  await target.storage.deleteMany(target.ns, groupRangeFilter(group, from, to));
  return (await writeSlots(target, paths, group, accs)).documents;
}

/**
 * The documents of one group whose `start` is in `[from, to)`.
 *
 * @param group - the group.
 * @param from - range start, epoch ms (may be `-Infinity`).
 * @param to - range end, exclusive (may be `Infinity`).
 * @returns a filter over rollup documents.
 */
export function groupRangeFilter(group: RollupGroup, from: number, to: number): Record<string, unknown> {
  const start: Record<string, unknown> = {};
  if (Number.isFinite(from)) start.$gte = new Date(from);
  if (Number.isFinite(to)) start.$lt = new Date(to);
  const filter: Record<string, unknown> = { _id: { $gte: `${group.key}:`, $lt: `${group.key};` } };
  if (Object.keys(start).length > 0) filter.start = start;
  return filter;
}

/**
 * The range `[from, to)` widened to whole slots.
 *
 * @param spec - the rollup.
 * @param from - range start.
 * @param to - range end (inclusive time of the last measurement).
 * @returns slot-aligned `[start, end)`.
 */
export function slotRange(spec: ResolvedSlotsSpec, from: number, to: number): [number, number] {
  return [slotStart(from, spec.every), nextSlotStart(slotStart(to, spec.every), spec.every)];
}

/**
 * The storage's `upsertOne`, bound.
 *
 * @param storage - a storage.
 * @returns its `upsertOne`.
 */
export function requireUpsert(storage: Storage): NonNullable<Storage['upsertOne']> {
  if (storage.upsertOne === undefined) throw new TypeError('storage has no upsertOne');
  return (ns, filter, update) =>
    (storage.upsertOne as NonNullable<Storage['upsertOne']>).call(storage, ns, filter, update);
}
