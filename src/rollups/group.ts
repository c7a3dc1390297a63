/**
 * The group of a series under a rollup: its value (what `$group`'s `_id` would be) and a key usable in
 * document ids. Every measurement of a write batch has the batch's series, so the group is computed once
 * per series and cached, never per measurement.
 *
 * @packageDocumentation
 */
import { Buffer } from 'node:buffer';

import { serialize } from 'bson';

import { isPlainObject } from '../util/bson-value.js';
import { defineField, getOwnField, hasOwnField } from '../util/safe-record.js';
import type { ResolvedRollupSpec } from './spec.js';

/** A group: its value and its key. */
export interface RollupGroup {
  /** The group value (`null` for a missing value, a document for named paths). */
  readonly value: unknown;
  /** Hex of the BSON of `{"": value}` (`''` for a rollup without grouping). */
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
  defineField(holder, '', value);
  return newGroup(value, Buffer.from(serialize(holder)).toString('hex'));
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
