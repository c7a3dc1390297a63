/**
 * The rolling layout: `totals[]` on an entity document of another collection holding, per step, the
 * count (and sums) of the entity's measurements in the window ending at its latest step. Maintained by one
 * update-with-pipeline per touched step and commit: initialise `totals` (`$ifNull`), drop entries that
 * left the window (`$filter`), then add to the step's entry or append it (`$cond` over `$in`, `$map`,
 * `$concatArrays`). The entity document is upserted; its other fields are the user's.
 *
 * Late measurements are exact: the window's floor is taken from the later of the new step and the
 * newest entry, and a step below that floor is not added.
 *
 * @packageDocumentation
 */
import type { Storage } from '../storage/storage.js';
import type { FieldAcc, SlotAcc } from './accumulator.js';
import type { RollupGroup } from './group.js';
import { requireUpsert } from './slots-writer.js';
import type { ResolvedRollingSpec } from './spec.js';

/** A temporary field of the pipeline (removed by its last stage). */
const kFloor = '__rollupFloor';

/**
 * Start of the step holding `ms`.
 *
 * @param spec - the rollup.
 * @param ms - a time.
 * @returns the step start.
 */
export function rollingUnitSlot(spec: ResolvedRollingSpec, ms: number): number {
  return ms - (((ms % spec.stepMs) + spec.stepMs) % spec.stepMs);
}

/**
 * The update pipeline adding one step's accumulator to an entity's `totals`.
 *
 * @param spec - the rollup.
 * @param acc - the step's accumulator.
 * @returns the pipeline.
 */
export function rollingUpdate(spec: ResolvedRollingSpec, acc: SlotAcc): Array<Record<string, unknown>> {
  const h = new Date(acc.start);
  const entry: Record<string, unknown> = { timestamp: h, count: acc.count };
  const merged: Record<string, unknown> = { count: { $add: [{ $ifNull: ['$$e.count', 0] }, acc.count] } };
  spec.fields.forEach((f, i) => {
    const sum = (acc.fields[i] as FieldAcc).sum;
    entry[f.name] = sum;
    merged[f.name] = { $add: [{ $ifNull: [`$$e.${f.name}`, 0] }, sum] };
  });
  return [
    { $set: { totals: { $ifNull: ['$totals', []] } } },
    {
      $set: {
        [kFloor]: {
          $subtract: [{ $max: [h, { $max: '$totals.timestamp' }] }, spec.windowMs - spec.stepMs],
        },
      },
    },
    {
      $set: {
        totals: { $filter: { input: '$totals', as: 'e', cond: { $gte: ['$$e.timestamp', `$${kFloor}`] } } },
      },
    },
    {
      $set: {
        totals: {
          $cond: [
            { $lt: [h, `$${kFloor}`] },
            '$totals',
            {
              $cond: [
                { $in: [h, '$totals.timestamp'] },
                {
                  $map: {
                    input: '$totals',
                    as: 'e',
                    in: { $cond: [{ $eq: ['$$e.timestamp', h] }, { $mergeObjects: ['$$e', merged] }, '$$e'] },
                  },
                },
                { $concatArrays: ['$totals', [entry]] },
              ],
            },
          ],
        },
      },
    },
    { $unset: kFloor },
  ];
}

/**
 * The `totals` array of an entity from all its steps: the steps of the window ending at the latest one,
 * oldest first.
 *
 * @param spec - the rollup.
 * @param accs - every step of the entity.
 * @returns the entries.
 */
export function rollingTotals(
  spec: ResolvedRollingSpec,
  accs: ReadonlyArray<SlotAcc>,
): Array<Record<string, unknown>> {
  if (accs.length === 0) return [];
  const latest = Math.max(...accs.map((a) => a.start));
  const floor = latest - (spec.windowMs - spec.stepMs);
  return accs
    .filter((a) => a.start >= floor)
    .sort((a, b) => a.start - b.start)
    .map((a) => {
      const entry: Record<string, unknown> = { timestamp: new Date(a.start), count: a.count };
      spec.fields.forEach((f, i) => {
        entry[f.name] = (a.fields[i] as FieldAcc).sum;
      });
      return entry;
    });
}

/**
 * Whether a key value can be an entity's `_id`: not missing (`null`), not an array and not a regular
 * expression, which no document's `_id` may be. Measurements with another key are not rolled up, as
 * those without one.
 */
function isEntityId(value: unknown): boolean {
  if (value === null || Array.isArray(value) || value instanceof RegExp) return false;
  return (value as { _bsontype?: unknown })._bsontype !== 'BSONRegExp';
}

/**
 * Add an entity's steps of one commit: one pipeline upsert per step, oldest first.
 *
 * @param storage - the storage.
 * @param ns - the target namespace.
 * @param spec - the rollup.
 * @param group - the entity (its key value is the `_id`; keys no `_id` may be are not written).
 * @param accs - the touched steps.
 * @returns the number of updates.
 */
export async function writeRolling(
  storage: Storage,
  ns: string,
  spec: ResolvedRollingSpec,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<number> {
  if (!isEntityId(group.value)) return 0;
  const upsert = requireUpsert(storage);
  const ordered = accs.length > 1 ? [...accs].sort((a, b) => a.start - b.start) : accs;
  for (const acc of ordered) await upsert(ns, { _id: group.value }, rollingUpdate(spec, acc));
  return ordered.length;
}

/**
 * Replace an entity's `totals` by the window computed from all its steps.
 *
 * @param storage - the storage.
 * @param ns - the target namespace.
 * @param spec - the rollup.
 * @param group - the entity.
 * @param accs - every step of the entity (recomputed from the buckets).
 * @returns the number of documents written.
 */
export async function rewriteRolling(
  storage: Storage,
  ns: string,
  spec: ResolvedRollingSpec,
  group: RollupGroup,
  accs: ReadonlyArray<SlotAcc>,
): Promise<number> {
  if (!isEntityId(group.value)) return 0;
  await requireUpsert(storage)(ns, { _id: group.value }, { $set: { totals: rollingTotals(spec, accs) } });
  return 1;
}
