/**
 * The group of a series under a rollup: its value (what `$group`'s `_id` would be) and a key usable in
 * document ids. Every measurement of a write batch has the batch's series, so the group is computed once
 * per series and cached, never per measurement.
 *
 * @packageDocumentation
 */
import { Buffer } from 'node:buffer';

import { Decimal128, Double, Int32, serialize } from 'bson';

import { bsonNumberValue, isPlainObject } from '../util/bson-value.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import type { ResolvedRollupSpec } from './spec.js';

/** A group: its value and its key. */
export interface RollupGroup {
  /** The group value (`null` for a missing value, a document for named paths). */
  readonly value: unknown;
  /**
   * Hex of the BSON of `{"": value}`, its numbers in one form per value (`''` for a rollup without
   * grouping).
   */
  readonly key: string;
  /**
   * The last document id built for the group (see `slotDocumentId`) and the slot or period start it is
   * for: a series' commits write the same document for a whole slot, so its id is built once.
   */
  lastId: string | undefined;
  lastIdStart: number;
  /** Likewise, the last `$setOnInsert` fields built for a slot document of the group, and their start. */
  lastSetOnInsert: Readonly<Record<string, unknown>> | undefined;
  lastSetOnInsertStart: number;
}

/** Cached groups per series are dropped past this many (a cache, not a registry). */
const kMaxCachedGroups = 100_000;

/**
 * The group of a (normalised) meta value.
 *
 * @param spec - the rollup.
 * @param meta - the series' normalised meta, `undefined` without one.
 * @returns the group.
 */
export function groupOf(spec: ResolvedRollupSpec, meta: unknown): RollupGroup {
  if (spec.groupBy.length === 0) return newGroup(null, '');
  let value: unknown;
  if (!spec.groupIsDocument) {
    value = valueAt(meta, (spec.groupBy[0] as { inMeta: ReadonlyArray<string> }).inMeta);
  } else {
    const doc: Record<string, unknown> = {};
    for (const path of spec.groupBy) defineField(doc, path.name, valueAt(meta, path.inMeta));
    value = doc;
  }
  const holder: Record<string, unknown> = {};
  defineField(holder, '', keyValue(value));
  return newGroup(value, Buffer.from(serialize(holder)).toString('hex'));
}

/**
 * The value a group key is made of: `value` with every number in one form per numeric value, so that
 * values `$group` finds equal (`1`, `Double(1)`, `Long(1)`, `-0`) have one key, as they have one `_id`.
 * An integer in the int32 range is an int32, any other number an exact double as a JS number, an int64
 * beyond 2^53 an int64; a `Decimal128` is one of those when it holds such a value exactly. The group's
 * value stays the first one seen, as `$group`'s `_id` does.
 */
function keyValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(keyValue);
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const name of Object.keys(value)) defineField(out, name, keyValue(value[name]));
    return out;
  }
  const tag = (value as { _bsontype?: unknown } | null)?._bsontype;
  if (
    typeof value !== 'number' &&
    tag !== 'Int32' &&
    tag !== 'Double' &&
    tag !== 'Long' &&
    tag !== 'Decimal128'
  ) {
    return value;
  }
  const n = bsonNumberValue(value) as number;
  if (Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31) return new Int32(n);
  if (tag === 'Long' && !Number.isSafeInteger(n)) return value;
  if (
    tag === 'Decimal128' &&
    (!Number.isFinite(n) || Decimal128.fromString(String(n)).toString() !== (value as Decimal128).toString())
  ) {
    return value;
  }
  return new Double(n);
}

function newGroup(value: unknown, key: string): RollupGroup {
  return {
    value,
    key,
    lastId: undefined,
    lastIdStart: NaN,
    lastSetOnInsert: undefined,
    lastSetOnInsertStart: NaN,
  };
}

/** A per-rollup cache of groups by series key (the catalog's binary meta key). */
export class GroupCache {
  readonly #spec: ResolvedRollupSpec;
  readonly #bySeries = new Map<string, RollupGroup>();
  /** One object per group: the series of a group share it (and its cached document id). */
  readonly #byKey = new Map<string, RollupGroup>();

  /** @param spec - the rollup. */
  constructor(spec: ResolvedRollupSpec) {
    this.#spec = spec;
  }

  /**
   * The group of a series.
   *
   * @param seriesKey - the series' binary meta key.
   * @param meta - its normalised meta.
   * @returns the group.
   */
  get(seriesKey: string, meta: unknown): RollupGroup {
    let group = this.#bySeries.get(seriesKey);
    if (group === undefined) {
      if (this.#bySeries.size >= kMaxCachedGroups) {
        this.#bySeries.clear();
        this.#byKey.clear();
      }
      const computed = groupOf(this.#spec, meta);
      group = this.#byKey.get(computed.key);
      if (group === undefined) {
        group = computed;
        this.#byKey.set(group.key, group);
      }
      this.#bySeries.set(seriesKey, group);
    }
    return group;
  }
}

/** The value at a path inside the meta; `null` when missing (arrays are not traversed). */
function valueAt(meta: unknown, path: ReadonlyArray<string>): unknown {
  let node = meta;
  for (const segment of path) {
    if (!isPlainObject(node) || !hasOwnField(node, segment)) return null;
    node = getOwnField(node, segment);
  }
  return node === undefined ? null : node;
}
