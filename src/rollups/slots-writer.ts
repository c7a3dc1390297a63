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
import type { Storage } from '../storage/storage.js';
import { defineField } from '../util/safe-record.js';
import type { FieldAcc, SlotAcc } from './accumulator.js';
import type { RollupGroup } from './group.js';
import { nextSlotStart, slotStart } from './slot-math.js';
import type { ResolvedField, ResolvedSlotsSpec } from './spec.js';

/**
 * The `_id` of a slot document: the group key and the slot start (no hashing: the key is the group's
 * cached hex).
 *
 * @param group - the group.
 * @param start - slot start, epoch ms.
 * @returns the id.
 */
export function slotDocumentId(group: RollupGroup, start: number): string {
  return `${group.key}:${start}`;
}

/**
 * The upsert that adds one slot accumulator to its document.
 *
 * @param spec - the rollup.
 * @param group - the group.
 * @param acc - the slot's accumulator.
 * @returns a MongoDB update document (`$setOnInsert`, `$inc`, and `$min`/`$max` where kept).
 * @example
 * ```ts
 * // { $setOnInsert: { group: 'a', start: ISODate(...) }, $inc: { count: 3, 'temp.count': 3, 'temp.sum': 64.5 },
 * //   $min: { 'temp.min': 21, 'temp.first': { t: ISODate(...), v: 21.5 } }, $max: { ... } }
 * ```
 */
export function slotUpdate(
  spec: ResolvedSlotsSpec,
  group: RollupGroup,
  acc: SlotAcc,
): Record<string, unknown> {
  const inc: Record<string, unknown> = { count: acc.count };
  const min: Record<string, unknown> = {};
  const max: Record<string, unknown> = {};
  fieldOperators(spec.fields, acc.fields, '', inc, min, max);
  const update: Record<string, unknown> = {
    $setOnInsert: { group: group.value, start: new Date(acc.start) },
    $inc: inc,
  };
  if (Object.keys(min).length > 0) update.$min = min;
  if (Object.keys(max).length > 0) update.$max = max;
  return update;
}

/**
 * Fill `$inc`, `$min` and `$max` with the fields' paths under `prefix`.
 *
 * @param fields - the resolved fields.
 * @param accs - their accumulators.
 * @param prefix - `''` or a positional prefix ending in a dot.
 * @param inc - `$inc` document to fill.
 * @param min - `$min` document to fill.
 * @param max - `$max` document to fill.
 */
export function fieldOperators(
  fields: ReadonlyArray<ResolvedField>,
  accs: ReadonlyArray<FieldAcc>,
  prefix: string,
  inc: Record<string, unknown>,
  min: Record<string, unknown>,
  max: Record<string, unknown>,
): void {
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i] as ResolvedField;
    const a = accs[i] as FieldAcc;
    const p = `${prefix}${f.name}.`;
    defineField(inc, `${p}count`, a.count);
    defineField(inc, `${p}sum`, a.sum);
    if (a.count === 0) continue;
    if (f.min) defineField(min, `${p}min`, a.min);
    if (f.max) defineField(max, `${p}max`, a.max);
    if (f.first) defineField(min, `${p}first`, { t: new Date(a.firstT), v: a.firstV });
    if (f.last) defineField(max, `${p}last`, { t: new Date(a.lastT), v: a.lastV });
  }
}

/**
 * Add a group's slot accumulators of one commit: one upsert per slot.
 *
 * @param storage - the storage (with `upsertOne`).
 * @param ns - the rollup's namespace.
 * @param spec - the rollup.
 * @param group - the group.
 * @param accs - the touched slots.
 * @returns the number of documents written.
 */
export async function writeSlots(
  storage: Storage,
  ns: string,
  spec: ResolvedSlotsSpec,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<number> {
  const upsert = requireUpsert(storage);
  for (const acc of accs)
    await upsert(ns, { _id: slotDocumentId(group, acc.start) }, slotUpdate(spec, group, acc));
  return accs.length;
}

/**
 * Replace a group's slot documents in `[from, to)` (slot-aligned) by the given accumulators.
 *
 * @param storage - the storage.
 * @param ns - the rollup's namespace.
 * @param spec - the rollup.
 * @param group - the group.
 * @param from - first slot start.
 * @param to - end (a slot start, exclusive).
 * @param accs - the recomputed slots in the range.
 * @returns the number of documents written.
 */
export async function rewriteSlots(
  storage: Storage,
  ns: string,
  spec: ResolvedSlotsSpec,
  group: RollupGroup,
  from: number,
  to: number,
  accs: ReadonlyArray<SlotAcc>,
): Promise<number> {
  await storage.deleteMany(ns, groupRangeFilter(group, from, to));
  return await writeSlots(storage, ns, spec, group, accs);
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
