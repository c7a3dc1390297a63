/**
 * MongoDB's `MinMax` (`bucket_catalog/flat_bson.{h,cpp}`, docs/mongodb-behaviour.md §3): the per-path minimum and maximum
 * of a bucket's measurements, kept as a tree mirroring the measurement documents, plus the change
 * tracking that turns each commit's changes into `$set` operations on `control.min` / `control.max`.
 *
 * ## The tree
 * Every node is one field (or array position) seen in some measurement. A node has two independent slots,
 * `min` and `max`; each slot is in one of four kinds. Children are shared by both slots: a child may be
 * visible in `max` and unset in `min`. Children are kept in *stored order*, which is the field order of
 * `control.min`/`control.max` (§3.3).
 *
 * ## Slot kinds (per slot, for the min slot; the max slot is symmetric with ">")
 *
 * | from \ incoming | scalar `v`                                | object                                   | array                                    |
 * |-----------------|-------------------------------------------|------------------------------------------|------------------------------------------|
 * | `unset`         | → `value` v                               | → `object`, children unset, recurse      | → `array`, children unset, recurse       |
 * | `value` s       | → `value` v if `v < s` (full BSON order)  | → `object` (as above) if 20 < canon(s)   | → `array` (as above) if 25 < canon(s)    |
 * | `object`        | → `value` v if canon(v) < 20              | stays `object`, recurse                  | → `array` (as above) (25 < 20 is false for min; max switches) |
 * | `array`         | → `value` v if canon(v) < 25              | → `object` (as above) (min only)         | stays `array`, recurse positionally      |
 *
 * "Children unset" applies to the slot that switched, on the direct children only: their positions stay,
 * so a later update reuses them. A switch to `value` leaves the children alone (they are invisible under
 * a value and are reset when the slot becomes a container again). Recursion only updates the slots that
 * took the container path. Missing fields (and `undefined` values) change nothing.
 *
 * ## Change tracking
 * Each slot has two flags: `updated` (changed since the last {@link takeUpdates}; set whenever the slot
 * takes a new value or kind, exactly like the server's `Data::_updated`) and `emitted` (the slot was
 * visible in the last emitted document). {@link takeUpdates} walks the visible tree and emits:
 * - an updated slot → `$set` of that path to the slot's whole current value;
 * - a container whose newly visible children are not all after its previously visible ones → `$set` of
 *   the whole container (a `$set` of a missing field appends it, so it could not put it in the middle);
 * - a change under a field name that cannot be written as a dotted-path segment → `$set` of the nearest
 *   safe ancestor (the whole document is the path `[]`).
 *
 * ## Snapshots and typed slots (compressed buckets)
 * A compressed bucket's commit carries a {@link MinMaxSnapshot} ({@link snapshotMinMax}) rather than
 * documents or operations: field names and values, the documents built only when read. Once a snapshot
 * finds the tree flat and holding only numbers and dates, later folds go into typed slots
 * (`min-max-slots.ts`, {@link MinMax.slots}) until a measurement brings a new field or another type; the
 * tree then gets the slots' values back and takes over.
 *
 * Deviations from the server, where JavaScript cannot follow it:
 * - BSON allows duplicate field names, JS objects do not. The server can create a duplicate when an
 *   array position is claimed for an object field (a mixed-schema-only path, §3.2); here a position is
 *   only claimed by a name the node does not already have, and the lazily built name index is kept up to
 *   date on claims (the server's index goes stale there, which also leads to duplicates).
 * - The server emits DocDiff (§3.4); this module emits `$set` operations with the same effect and with
 *   field order preserved.
 * - JS engines enumerate integer-like keys (`"0"`, `"42"`) first in any object, so documents holding such
 *   field names list them first, whatever the stored order is (js-bson writes them in that order too).
 *
 * @packageDocumentation
 */

import { invariant } from '../util/invariant.js';
import {
  bsonTypeOf,
  BsonType,
  ownValue,
  canonicalTypeOf,
  CanonicalType,
  compareBsonValues,
  compareUtf8,
  dbRefToDocument,
} from '../util/bson-value.js';
import { defineField, getOwnField, hasOwnField, isPathSafeFieldName } from '../util/safe-record.js';
import type { DBRef } from 'bson';
import { MinMaxSnapshot } from './min-max-snapshot.js';
import { foldIntoSlots, slotsOf, slotValue } from './min-max-slots.js';
import type { MinMaxSlots } from './min-max-slots.js';
import type { MeasurementMap } from './measurement-map.js';

/** The kind of a min or max slot; see the transition table in this module's documentation. */
export type SlotKind = 'unset' | 'value' | 'object' | 'array';

/**
 * A field or array position of the tree, with its two slots (min and max). Internal state, exported for
 * tests.
 *
 * A slot is four properties of the node (`minKind`, `minValue`, `minUpdated`, `minEmitted` and the same
 * for max) rather than an object of its own, and a node without children has `children: null`: a bucket
 * keeps its tree while it is open, and on Node 20 this makes a leaf 128 bytes instead of 224.
 *
 * Per slot: `Kind` is what it holds; `Value` the scalar when the kind is `'value'` (a date or binary value
 * is a copy of the measurement's), else `undefined`; `Updated` whether it changed since the last
 * {@link takeUpdates}; `Emitted` whether it was visible in the document last emitted by
 * {@link takeUpdates} (or loaded by {@link minMaxFromDocuments}).
 */
export interface MinMaxNode {
  /** Field name; `null` for an array position not (yet) claimed by an object field. */
  name: string | null;
  /**
   * Whether `name` can be a dotted-path segment ({@link isPathSafeFieldName}), decided once when the node
   * is named: every commit's {@link takeUpdates} asks it for every visible field.
   */
  pathSafe: boolean;
  /** Index of this node in its parent's `children`, kept current on inserts (used by the name index). */
  pos: number;
  /** The min slot's kind. */
  minKind: SlotKind;
  /** The min slot's scalar. */
  minValue: unknown;
  /** Whether the min slot changed since the last {@link takeUpdates}. */
  minUpdated: boolean;
  /** Whether the min slot was visible in the last emitted `control.min`. */
  minEmitted: boolean;
  /** The max slot's kind. */
  maxKind: SlotKind;
  /** The max slot's scalar. */
  maxValue: unknown;
  /** Whether the max slot changed since the last {@link takeUpdates}. */
  maxUpdated: boolean;
  /** Whether the max slot was visible in the last emitted `control.max`. */
  maxEmitted: boolean;
  /** Children in stored order, shared by both slots; `null` until the first one. */
  children: MinMaxNode[] | null;
  /**
   * Name → child, built lazily once a linear search has walked {@link LINEAR_SEARCH_LIMIT} children
   * without an answer (the server's `_fieldNameToIndex`); `null` until then.
   */
  index: Map<string, MinMaxNode> | null;
}

/** A bucket's min/max tree. Create with {@link createMinMax}; the root is an object in both slots. */
export interface MinMax {
  /** The root (the measurement document). */
  readonly root: MinMaxNode;
  /**
   * Which sides have a slot changed since the last {@link takeUpdates} ({@link MIN_CHANGED} |
   * {@link MAX_CHANGED}): a side without changes is not walked. Measurements in time order change the
   * maximum time on every commit but rarely any minimum, and past a bucket's first measurements most
   * other fields change neither.
   */
  changed: number;
  /**
   * The `control.min` and `control.max` last returned by {@link takeDocuments}, or `undefined` when the
   * tracking has moved on since (a {@link takeUpdates}, or a fresh or reloaded MinMax). The next
   * {@link takeDocuments} returns the same object for a side without changes, and for a side with a few
   * changed fields a shallow copy with just those fields rebuilt: published documents are never changed
   * afterwards, so consecutive commits share what did not change (whoever receives them must not change
   * them in place either).
   */
  published: { min: Record<string, unknown>; max: Record<string, unknown> } | undefined;
  /**
   * The last flat {@link MinMaxSnapshot} taken by {@link snapshotMinMax} (`undefined` before the first,
   * and after a capture of documents): the next one shares its names, and the values of a side without
   * changes.
   */
  snapshot: MinMaxSnapshot | undefined;
  /**
   * While set, the top-level fields' current minima and maxima are in these typed slots, not in the tree
   * (whose root children hold the values as of when the slots were made). Made by {@link snapshotMinMax}
   * when the tree is flat and holds only numbers and dates; every fold that changes no structure goes
   * there; anything else first writes the slots back into the tree ({@link leaveSlots}).
   */
  slots: MinMaxSlots | undefined;
  /** The view of `slots` {@link viewMinMax} hands out (made once per slots). */
  view: MinMaxSnapshot | undefined;
}

/** One change to `control.min` or `control.max`: `$set` the field at `path` (relative) to `value`. */
export interface SetOp {
  /** Path segments below `control.min`/`control.max`; `[]` replaces the whole object. Array positions are decimal strings. */
  readonly path: ReadonlyArray<string>;
  /** The new value: the slot's scalar or a freshly built object/array. */
  readonly value: unknown;
}

/** The changes of both sides since the previous {@link takeUpdates}, in application order. */
export interface MinMaxUpdates {
  /** `$set` operations relative to `control.min`. */
  readonly min: ReadonlyArray<SetOp>;
  /** `$set` operations relative to `control.max`. */
  readonly max: ReadonlyArray<SetOp>;
}

/** Options of {@link updateMinMax}. */
export interface MinMaxUpdateOptions {
  /**
   * A top-level field to leave out (the collection's metaField).
   * @defaultValue `undefined` (nothing skipped)
   */
  readonly skipField?: string | undefined;
}

type Side = 'min' | 'max';

/**
 * The node properties of each side's slot, for code that works on either side (`node[SLOT[side].kind]`);
 * the per-value paths name the properties directly.
 */
const SLOT = {
  min: { kind: 'minKind', value: 'minValue', updated: 'minUpdated', emitted: 'minEmitted' },
  max: { kind: 'maxKind', value: 'maxValue', updated: 'maxUpdated', emitted: 'maxEmitted' },
} as const;

/** What an absent children list reads as. */
const kNoChildren: ReadonlyArray<MinMaxNode> = Object.freeze([]);

/** Direction of a slot: the min slot takes smaller values (−1), the max slot larger ones (+1). */
const MIN = -1;
const MAX = 1;

/** Bits of {@link MinMax.changed}: a min slot changed; a max slot changed. */
const MIN_CHANGED = 1;
const MAX_CHANGED = 2;

/** The server's `kMaxLinearSearchLength`: children searched linearly before a name index is built. */
const LINEAR_SEARCH_LIMIT = 12;

function newNode(name: string | null, pos: number): MinMaxNode {
  return {
    name,
    pathSafe: name !== null && isPathSafeFieldName(name),
    pos,
    minKind: 'unset',
    minValue: undefined,
    minUpdated: false,
    minEmitted: false,
    maxKind: 'unset',
    maxValue: undefined,
    maxUpdated: false,
    maxEmitted: false,
    children: null,
    index: null,
  };
}

/**
 * Create an empty MinMax. Its root is an object in both slots and counts as already emitted as `{}`,
 * so the first {@link takeUpdates} lists every field.
 *
 * @returns a fresh MinMax.
 * @example
 * ```ts
 * const mm = createMinMax();
 * updateMinMax(mm, { time: roundedStart }); // the catalog's seed, before any measurement
 * updateMinMax(mm, measurement, { skipField: 'meta' });
 * minDocument(mm); // control.min
 * ```
 */
export function createMinMax(): MinMax {
  const root = newNode(null, 0);
  root.minKind = 'object';
  root.maxKind = 'object';
  root.minEmitted = true;
  root.maxEmitted = true;
  root.children = [];
  return { root, changed: 0, published: undefined, snapshot: undefined, slots: undefined, view: undefined };
}

// ---------------------------------------------------------------------------------------------------
// Update
// ---------------------------------------------------------------------------------------------------

/**
 * Fold one measurement into the tree (the server's `MinMax::update`, §3.2 and §3.3).
 *
 * @param mm - the MinMax to update.
 * @param measurement - a measurement document (or a stored `control.min`/`control.max`).
 * @param options - `skipField`: top-level field to ignore (the metaField).
 * @throws {@link TimeseriesError} `BadValue` for values js-bson cannot write.
 */
export function updateMinMax(
  mm: MinMax,
  measurement: Readonly<Record<string, unknown>>,
  options: MinMaxUpdateOptions = {},
): void {
  const slots = mm.slots;
  if (slots !== undefined) {
    const changed = foldIntoSlots(slots, measurement, options.skipField, MIN_CHANGED, MAX_CHANGED);
    if (changed >= 0) {
      mm.changed |= changed;
      return;
    }
    leaveSlots(mm);
  }
  mm.changed |= updateObject(mm.root, measurement, true, true, options.skipField);
}

/**
 * {@link updateMinMax} for the measurement a compressed bucket's map has just kept: folded from the
 * values the map packed when the slots take them all, otherwise from the measurement (read from `source`
 * only then: a measurement staged as a row of its call is built when asked for).
 *
 * @param mm - the MinMax.
 * @param map - the bucket's measurement map, whose last kept measurement is `source`'s.
 * @param source - holds the measurement.
 * @param options - `skipField`: top-level field to ignore (the metaField).
 */
export function updateMinMaxFromKept(
  mm: MinMax,
  map: MeasurementMap,
  source: { readonly measurement: Readonly<Record<string, unknown>> },
  options: MinMaxUpdateOptions,
): void {
  const slots = mm.slots;
  if (slots !== undefined) {
    const changed = map.foldKeptInto(slots, MIN_CHANGED, MAX_CHANGED);
    if (changed >= 0) {
      mm.changed |= changed;
      return;
    }
  } else if (enterSlotsFromKept(mm, map)) return;
  updateMinMax(mm, source.measurement, options);
}

/**
 * A new bucket's MinMax, holding only the catalog's seed (the time field at the bucket's rounded start),
 * goes to typed slots straight from the first measurement its map kept, when slots can hold it: what
 * folding the measurement into the tree and taking the first snapshot leads to, without making a tree
 * node per field first (most of what a bucket of a new series allocates).
 *
 * @returns whether it did (the measurement is folded).
 */
function enterSlotsFromKept(mm: MinMax, map: MeasurementMap): boolean {
  const children = mm.root.children;
  if (mm.snapshot !== undefined || children?.length !== 1) return false;
  const seed = children[0] as MinMaxNode;
  const { name, minValue, maxValue } = seed;
  if (name === null || !(minValue instanceof Date) || !(maxValue instanceof Date)) return false;
  const slots = map.firstSlots(name, minValue.getTime(), maxValue.getTime());
  if (slots === undefined) return false;
  mm.slots = slots;
  mm.root.children = null;
  mm.root.index = null;
  mm.changed |= MIN_CHANGED | MAX_CHANGED;
  return true;
}

/**
 * Make the tree's nodes again from the slots and fold into the tree from now on. Only compressed buckets
 * have slots, and they read the tree through snapshots and documents, not through {@link takeUpdates}:
 * every node counts as shown and updated.
 */
function leaveSlots(mm: MinMax): void {
  const slots = mm.slots;
  if (slots === undefined) return;
  mm.slots = undefined;
  mm.view = undefined;
  // The last snapshot shares the slots' form, not the arrays the tree's snapshots reuse.
  mm.snapshot = undefined;
  const { names, kinds, values } = slots;
  const children: MinMaxNode[] = [];
  for (let i = 0; i < names.length; i++) {
    const node = newNode(names[i] as string, i);
    const kind = kinds[i] as number;
    node.minKind = 'value';
    node.minValue = slotValue(kind, values[2 * i] as number);
    node.minUpdated = true;
    node.minEmitted = true;
    node.maxKind = 'value';
    node.maxValue = slotValue(kind, values[2 * i + 1] as number);
    node.maxUpdated = true;
    node.maxEmitted = true;
    children.push(node);
  }
  mm.root.children = children;
  mm.root.index = null;
}

/**
 * The children of `node` are walked with a cursor in step with `doc`'s fields (§3.3). Returns which sides
 * had a slot changed ({@link MIN_CHANGED} | {@link MAX_CHANGED}; here and in the update functions below).
 */
function updateObject(
  node: MinMaxNode,
  doc: Readonly<Record<string, unknown>>,
  doMin: boolean,
  doMax: boolean,
  skipField: string | undefined,
): number {
  let changed = 0;
  const children = (node.children ??= []);
  let cursor = 0;
  // Number of leading children matched in order; the range before it never needs searching again.
  let handled = 0;
  let skipped = false;
  // for-in with an own-property check, not Object.keys: no array of names per call (this runs
  // for every measurement).
  for (const name in doc) {
    if (!hasOwnField(doc, name)) continue;
    const value = doc[name];
    // `undefined` means missing (js-bson `ignoreUndefined`), and the metaField is not summarised.
    if (value === undefined || name === skipField) continue;

    if (cursor === children.length && skipped) cursor = search(node, handled, children.length, name);
    if (cursor === children.length) {
      insertChild(node, cursor, name);
    } else {
      const atCursor = children[cursor] as MinMaxNode;
      if (atCursor.name === null && !hasChild(node, name)) {
        // An unclaimed array position under the cursor is taken over by this field.
        claim(node, atCursor, name);
      } else if (atCursor.name !== name) {
        // Either the document lacks fields we have (skip forward) or its fields come in another order.
        const found = search(node, cursor + 1, children.length, name);
        if (found !== children.length) {
          cursor = found;
          skipped = true;
        } else if (skipped) {
          const again = search(node, handled, cursor, name);
          if (again === cursor) insertChild(node, cursor, name);
          else cursor = again;
        } else {
          // Everything so far matched in order: the new field goes right here, keeping the input order.
          insertChild(node, cursor, name);
        }
      }
    }

    changed |= updateNode(children[cursor] as MinMaxNode, value, doMin, doMax);
    cursor++;
    if (!skipped) handled++;
  }
  return changed;
}

/**
 * Find `name` among `children[first, last)`; returns `last` when absent. Linear for up to
 * {@link LINEAR_SEARCH_LIMIT} children (claiming the first unclaimed array position met, as the server
 * does), then through the name index, which is built on first need and kept from then on.
 */
function search(node: MinMaxNode, first: number, last: number, name: string): number {
  if (node.index !== null) {
    const found = node.index.get(name);
    return found === undefined ? last : found.pos;
  }
  const children = node.children ?? kNoChildren;
  let i = first;
  for (let remaining = LINEAR_SEARCH_LIMIT; i < last && remaining > 0; i++, remaining--) {
    const child = children[i] as MinMaxNode;
    if (child.name === name) return i;
    if (child.name === null && !hasChild(node, name)) {
      claim(node, child, name);
      return i;
    }
  }
  if (i === last) return last;
  node.index = new Map();
  for (const child of children)
    if (child.name !== null && !node.index.has(child.name)) node.index.set(child.name, child);
  return search(node, first, last, name);
}

/** Whether `node` has a child named `name` anywhere (used only around unclaimed array positions). */
function hasChild(node: MinMaxNode, name: string): boolean {
  if (node.index !== null) return node.index.has(name);
  for (const child of node.children ?? kNoChildren) if (child.name === name) return true;
  return false;
}

function claim(node: MinMaxNode, child: MinMaxNode, name: string): void {
  child.name = name;
  child.pathSafe = isPathSafeFieldName(name);
  node.index?.set(name, child);
}

function insertChild(node: MinMaxNode, at: number, name: string | null): void {
  const children = (node.children ??= []);
  children.splice(at, 0, newNode(name, at));
  for (let i = at + 1; i < children.length; i++) (children[i] as MinMaxNode).pos = i;
  if (name !== null) node.index?.set(name, children[at] as MinMaxNode);
}

function updateNode(node: MinMaxNode, value: unknown, doMin: boolean, doMax: boolean): number {
  const type = bsonTypeOf(value);
  let changed = 0;
  if (type === BsonType.object) {
    const takeMin = doMin && takesContainer(node.minKind, node.minValue, CanonicalType.object, 'object', MIN);
    const takeMax = doMax && takesContainer(node.maxKind, node.maxValue, CanonicalType.object, 'object', MAX);
    if (takeMin && becomeContainer(node, 'min', 'object')) changed |= MIN_CHANGED;
    if (takeMax && becomeContainer(node, 'max', 'object')) changed |= MAX_CHANGED;
    if (takeMin || takeMax) {
      // A js-bson DBRef is written as the embedded document {$ref, $id, $db?, ...fields}.
      const doc = asDocument(value);
      changed |= updateObject(node, doc, takeMin, takeMax, undefined);
    }
  } else if (type === BsonType.array) {
    const takeMin = doMin && takesContainer(node.minKind, node.minValue, CanonicalType.array, 'array', MIN);
    const takeMax = doMax && takesContainer(node.maxKind, node.maxValue, CanonicalType.array, 'array', MAX);
    if (takeMin && becomeContainer(node, 'min', 'array')) changed |= MIN_CHANGED;
    if (takeMax && becomeContainer(node, 'max', 'array')) changed |= MAX_CHANGED;
    if (takeMin || takeMax) {
      // Positional: element i updates child i whatever its name; missing positions are appended.
      const arr = value as ReadonlyArray<unknown>;
      const children = (node.children ??= []);
      for (let i = 0; i < arr.length; i++) {
        if (i === children.length) insertChild(node, i, null);
        // js-bson writes an undefined element (or a hole) as null.
        changed |= updateNode(children[i] as MinMaxNode, arr[i] ?? null, takeMin, takeMax);
      }
    }
  } else {
    // A slot keeps its own copy of a date or binary value: the caller may change its object after the
    // insert, and the slot is written to control.min/max later.
    if (doMin && takesValue(node.minKind, node.minValue, value, MIN)) {
      node.minKind = 'value';
      node.minValue = ownValue(value);
      node.minUpdated = true;
      changed |= MIN_CHANGED;
    }
    if (doMax && takesValue(node.maxKind, node.maxValue, value, MAX)) {
      node.maxKind = 'value';
      node.maxValue = ownValue(value);
      node.maxUpdated = true;
      changed |= MAX_CHANGED;
    }
  }
  return changed;
}

/** Whether a slot moves to (or stays) the container of canonical type `canonical` (§3.2). */
function takesContainer(
  slotKind: SlotKind,
  slotValue: unknown,
  canonical: number,
  kind: 'object' | 'array',
  dir: number,
): boolean {
  switch (slotKind) {
    case 'unset':
      return true;
    case 'object':
    case 'array':
      return (
        slotKind === kind ||
        dir * (canonical - (slotKind === 'object' ? CanonicalType.object : CanonicalType.array)) > 0
      );
    case 'value':
      return dir * (canonical - canonicalTypeOf(slotValue)) > 0;
  }
}

/**
 * Switch a slot to a container kind; a real switch resets the children's slots on that side. Returns
 * whether it switched.
 */
function becomeContainer(node: MinMaxNode, side: Side, kind: 'object' | 'array'): boolean {
  const slot = SLOT[side];
  if (node[slot.kind] === kind) return false;
  node[slot.kind] = kind;
  node[slot.value] = undefined;
  node[slot.updated] = true;
  for (const child of node.children ?? kNoChildren) {
    child[slot.kind] = 'unset';
    child[slot.value] = undefined;
    child[slot.updated] = false;
  }
  return true;
}

/** Whether a slot takes scalar `value`: it is smaller (min) or larger (max) than what the slot holds. */
function takesValue(slotKind: SlotKind, current: unknown, value: unknown, dir: number): boolean {
  let take: boolean;
  switch (slotKind) {
    case 'unset':
      take = true;
      break;
    case 'object':
      take = dir * (canonicalTypeOf(value) - CanonicalType.object) > 0;
      break;
    case 'array':
      take = dir * (canonicalTypeOf(value) - CanonicalType.array) > 0;
      break;
    case 'value': {
      // Fast paths for the usual measurement values; both agree with compareBsonValues (NaN excluded: it
      // sorts below every number there).
      if (
        typeof value === 'number' &&
        typeof current === 'number' &&
        value === value &&
        current === current
      ) {
        take = dir > 0 ? value > current : value < current;
      } else if (value instanceof Date && current instanceof Date) {
        take = dir > 0 ? value.getTime() > current.getTime() : value.getTime() < current.getTime();
      } else {
        take = dir * compareBsonValues(value, current) > 0;
      }
      break;
    }
  }
  return take;
}

// ---------------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------------

/**
 * Build a slot's current value. With `mark`, also record it as emitted: the slot and every visible slot
 * below become `emitted` and not `updated`; invisible direct children become not `emitted`.
 */
function buildSlot(node: MinMaxNode, side: Side, mark: boolean): unknown {
  const slot = SLOT[side];
  if (mark) {
    node[slot.updated] = false;
    node[slot.emitted] = true;
  }
  switch (node[slot.kind]) {
    case 'value':
      return node[slot.value];
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const child of node.children ?? kNoChildren) {
        if (child[slot.kind] === 'unset') {
          if (mark) child[slot.emitted] = false;
          continue;
        }
        invariant(child.name !== null, 2101, 'visible child of an object without a field name');
        defineField(out, child.name, buildSlot(child, side, mark));
      }
      return out;
    }
    case 'array': {
      const out: unknown[] = [];
      for (const child of node.children ?? kNoChildren) {
        if (child[slot.kind] === 'unset') {
          if (mark) child[slot.emitted] = false;
          continue;
        }
        out.push(buildSlot(child, side, mark));
      }
      return out;
    }
    case 'unset':
      invariant(false, 2102, 'building an unset slot');
  }
}

/**
 * The current `control.min`: a fresh plain object in stored field order, unset paths left out. Does not
 * change the change tracking.
 *
 * @param mm - the MinMax.
 * @returns a new object; containers are fresh, scalars are the slots' values (dates and binaries copies
 *   of the measurements').
 */
export function minDocument(mm: MinMax): Record<string, unknown> {
  leaveSlots(mm);
  return buildSlot(mm.root, 'min', false) as Record<string, unknown>;
}

/**
 * The current `control.max`; see {@link minDocument}.
 *
 * @param mm - the MinMax.
 * @returns a new object in stored field order.
 */
export function maxDocument(mm: MinMax): Record<string, unknown> {
  leaveSlots(mm);
  return buildSlot(mm.root, 'max', false) as Record<string, unknown>;
}

/**
 * The `$set` operations that turn the previously emitted `control.min`/`control.max` into the current
 * ones (field order included), and reset the tracking so the next call reports only later changes.
 *
 * Applying `min` in order to the previous `control.min` — `$set: {'control.min.<path joined by .>': value}`,
 * or replacing `control.min` when the path is `[]` — yields exactly {@link minDocument}; likewise `max`.
 * The "previous" documents are `{}` for a fresh MinMax, the stored documents after
 * {@link minMaxFromDocuments}, and otherwise the state at the previous call. On a bucket's first commit
 * the caller writes the full documents and discards this call's result.
 *
 * @param mm - the MinMax.
 * @returns the operations for each side; empty lists when nothing changed.
 */
export function takeUpdates(mm: MinMax): MinMaxUpdates {
  leaveSlots(mm);
  const changed = mm.changed;
  if (changed === 0) return kNoUpdates;
  mm.changed = 0;
  mm.published = undefined;
  mm.snapshot = undefined;
  return {
    min: (changed & MIN_CHANGED) === 0 ? kNoOps : takeSide(mm.root, 'min'),
    max: (changed & MAX_CHANGED) === 0 ? kNoOps : takeSide(mm.root, 'max'),
  };
}

/**
 * The current `control.min` and `control.max` as whole documents, recorded as emitted: what a bucket's
 * first commit writes. Like {@link minDocument} and {@link maxDocument} followed by {@link takeUpdates},
 * without building the per-field operations that the first commit would discard.
 *
 * @param mm - the MinMax.
 * @returns the documents in stored field order, sharing with the previous call what did not change (see
 *   {@link MinMax.published}); the next {@link takeUpdates} reports later changes only.
 */
export function takeDocuments(mm: MinMax): {
  readonly min: Record<string, unknown>;
  readonly max: Record<string, unknown>;
} {
  leaveSlots(mm);
  const changed = mm.changed;
  mm.changed = 0;
  // The change bits are spent here: a later snapshot must not reuse values from before.
  mm.snapshot = undefined;
  const last = mm.published;
  const published =
    last === undefined
      ? {
          min: buildSlot(mm.root, 'min', true) as Record<string, unknown>,
          max: buildSlot(mm.root, 'max', true) as Record<string, unknown>,
        }
      : {
          min:
            (changed & MIN_CHANGED) === 0
              ? last.min
              : (republish(mm.root, 'min', last.min) as Record<string, unknown>),
          max:
            (changed & MAX_CHANGED) === 0
              ? last.max
              : (republish(mm.root, 'max', last.max) as Record<string, unknown>),
        };
  mm.published = published;
  return published;
}

/**
 * The current `control.min` and `control.max` as a {@link MinMaxSnapshot}: what a compressed bucket's
 * commit carries. When every top-level field holds a scalar on both sides (flat measurements), the
 * snapshot is the field names and values, sharing with the previous snapshot the names (while no field
 * was added) and the values of a side without changes; the documents are built only if someone reads
 * them. Otherwise it holds the documents, built now. A flat MinMax holding only numbers and dates moves
 * to typed slots here (see {@link MinMax.slots}); its later snapshots copy one array of doubles.
 *
 * A MinMax is written either through snapshots (compressed buckets) or through {@link takeUpdates} and
 * {@link takeDocuments} (version-1 buckets): a snapshot does not reset the slots' change tracking, so
 * {@link takeUpdates} after snapshots would report changes that were already written.
 *
 * @param mm - the MinMax.
 * @returns the snapshot; the same object as the previous call when nothing changed since.
 */
export function snapshotMinMax(mm: MinMax): MinMaxSnapshot {
  const changed = mm.changed;
  mm.changed = 0;
  // The documents takeDocuments last returned are not what was last written any more.
  mm.published = undefined;
  const last = mm.snapshot;
  const slots = mm.slots;
  if (slots !== undefined) {
    // The slots' names and types are fixed: the values are copied in one go.
    if (changed === 0 && last !== undefined) return last;
    const snapshot = MinMaxSnapshot.ofSlots(slots.names, slots.kinds, slots.values.slice());
    mm.snapshot = snapshot;
    return snapshot;
  }
  const children = mm.root.children ?? kNoChildren;
  const n = children.length;
  // A field added since the last snapshot changes both sides (a new field takes a value on each).
  const lastNames = last?.names;
  const sameNames = lastNames?.length === n;
  const keepMin = sameNames && (changed & MIN_CHANGED) === 0;
  const keepMax = sameNames && (changed & MAX_CHANGED) === 0;
  if (keepMin && keepMax) return last as MinMaxSnapshot;
  const names = sameNames ? lastNames : new Array<string>(n);
  const minValues = keepMin ? (last?.minValues as ReadonlyArray<unknown>) : new Array<unknown>(n);
  const maxValues = keepMax ? (last?.maxValues as ReadonlyArray<unknown>) : new Array<unknown>(n);
  for (let i = 0; i < n; i++) {
    const child = children[i] as MinMaxNode;
    // A side that kept its values was flat in the last snapshot and has not changed since.
    if (!keepMin) {
      if (child.minKind === 'object' || child.minKind === 'array') return snapshotDocuments(mm);
      (minValues as unknown[])[i] = child.minValue;
    }
    if (!keepMax) {
      if (child.maxKind === 'object' || child.maxKind === 'array') return snapshotDocuments(mm);
      (maxValues as unknown[])[i] = child.maxValue;
    }
    if (!sameNames) (names as string[])[i] = child.name as string;
  }
  const snapshot = MinMaxSnapshot.ofFields(names, minValues, maxValues);
  mm.snapshot = snapshot;
  // Flat: later measurements are folded into typed slots, if every value fits in one. The slots hold all
  // the tree held (a node per field, 128 bytes each, and a copy of each date): the nodes are let go, and
  // made again from the slots if a measurement ever leaves them (leaveSlots).
  const flat = slotsOf(names, minValues, maxValues);
  mm.slots = flat;
  if (flat !== undefined) {
    mm.root.children = null;
    mm.root.index = null;
    // Nor is this snapshot kept (its arrays, and the documents a first commit builds): the next one is
    // made from the slots, and a bucket of one measurement holds nothing twice.
    mm.snapshot = undefined;
  }
  return snapshot;
}

/**
 * Let go of the last snapshot of a MinMax in typed slots (the next {@link snapshotMinMax} copies the
 * slots afresh): for a bucket's first commit, whose document holds the documents the snapshot built, so
 * that a bucket of one measurement holds them once (as when the tree moves to slots).
 *
 * @param mm - the MinMax.
 */
export function forgetSlotsSnapshot(mm: MinMax): void {
  if (mm.slots !== undefined) mm.snapshot = undefined;
}

/**
 * The current `control.min` and `control.max` for a storage that keeps a copy before its write resolves
 * (`MinMaxSnapshot.kept`; `MemoryStorage` taking deferred columns): while the MinMax is in typed slots, a
 * view of them, one per slots, rather than a copy per commit; otherwise {@link snapshotMinMax}. The view
 * is valid until the bucket's next fold, which waits for the write carrying it.
 *
 * @param mm - the MinMax.
 * @returns the view, or a snapshot.
 */
export function viewMinMax(mm: MinMax): MinMaxSnapshot {
  const slots = mm.slots;
  if (slots === undefined) return snapshotMinMax(mm);
  mm.changed = 0;
  mm.published = undefined;
  // The next snapshotMinMax (if the bucket ever needs one) copies the slots afresh.
  mm.snapshot = undefined;
  if (mm.view?.numbers !== slots.values) {
    mm.view = MinMaxSnapshot.viewOfSlots(slots.names, slots.kinds, slots.values);
  }
  return mm.view;
}

/** A snapshot of whole documents (a nested field); the next snapshot starts afresh. */
function snapshotDocuments(mm: MinMax): MinMaxSnapshot {
  mm.snapshot = undefined;
  return MinMaxSnapshot.ofDocuments(minDocument(mm), maxDocument(mm));
}

/**
 * A visible container slot's current value, recorded as emitted, given `previous`, its value as last
 * emitted: `previous` itself when nothing below changed; a shallow copy with the changed children rebuilt
 * when the visible children are the same ones as before (values changed, none appeared or vanished);
 * otherwise a whole rebuild. Nothing is allocated for the unchanged parts.
 */
function republish(node: MinMaxNode, side: Side, previous: unknown): unknown {
  const slot = SLOT[side];
  if (node[slot.updated]) return buildSlot(node, side, true);
  const children = node.children ?? kNoChildren;
  // The shallow copy keeps the previous field order: only valid when the same children are visible.
  for (const child of children) {
    if ((child[slot.kind] === 'unset') === child[slot.emitted]) return buildSlot(node, side, true);
  }
  const isArray = node[slot.kind] === 'array';
  let out: Record<string, unknown> | unknown[] | undefined;
  let position = 0;
  for (const child of children) {
    if (child[slot.kind] === 'unset') continue;
    const at = position++;
    let value: unknown;
    if (child[slot.updated]) value = buildSlot(child, side, true);
    else if (child[slot.kind] === 'value' || !subtreeChanged(child, side)) continue;
    else {
      const before = isArray
        ? (previous as unknown[])[at]
        : getOwnField(previous as object, child.name as string);
      value = republish(child, side, before);
    }
    if (isArray) {
      out ??= (previous as unknown[]).slice();
      (out as unknown[])[at] = value;
    } else {
      out ??= { ...(previous as Record<string, unknown>) };
      defineField(out, child.name as string, value);
    }
  }
  return out ?? previous;
}

/** Whether any visible slot below `node` (a visible container on `side`) changed since it was emitted. */
function subtreeChanged(node: MinMaxNode, side: Side): boolean {
  const slot = SLOT[side];
  for (const child of node.children ?? kNoChildren) {
    const kind = child[slot.kind];
    if (kind === 'unset') {
      if (child[slot.emitted]) return true;
      continue;
    }
    if (child[slot.updated] || !child[slot.emitted]) return true;
    if (kind !== 'value' && subtreeChanged(child, side)) return true;
  }
  return false;
}

const kNoOps: ReadonlyArray<SetOp> = Object.freeze([]);
const kNoUpdates: MinMaxUpdates = Object.freeze({ min: kNoOps, max: kNoOps });

/**
 * The path of the walk in {@link collectChanges}: one array for every call (a walk is synchronous and
 * emits copies of it), emptied before each walk.
 */
const kWalkPath: string[] = [];

/**
 * Frozen one-segment paths by field name, shared by every commit of every bucket: a commit's changes are
 * mostly top-level fields (the time field's maximum, a few new extremes), and their paths then cost no
 * array per operation. Bounded: emptied when it reaches {@link kMaxSharedPaths} names.
 */
const kSharedPaths = new Map<string, ReadonlyArray<string>>();
const kMaxSharedPaths = 4096;

/** The path of an operation at `path` (the walk's current path), shared when it has one segment. */
function pathOf(path: ReadonlyArray<string>): ReadonlyArray<string> {
  if (path.length !== 1) return path.slice();
  const name = path[0] as string;
  let shared = kSharedPaths.get(name);
  if (shared === undefined) {
    if (kSharedPaths.size >= kMaxSharedPaths) kSharedPaths.clear();
    shared = Object.freeze([name]);
    kSharedPaths.set(name, shared);
  }
  return shared;
}

function takeSide(root: MinMaxNode, side: Side): SetOp[] {
  const out: SetOp[] = [];
  const path = kWalkPath;
  path.length = 0;
  if (root[SLOT[side].updated] || collectChanges(root, side, path, out)) {
    out.length = 0;
    out.push({ path: [], value: buildSlot(root, side, true) });
  }
  return out;
}

/**
 * Append the operations for the children of `node`, a visible, not updated container on `side` that
 * was emitted at `path`. Returns `true` when the changes can only be written by replacing `node` as a
 * whole; the caller then drops what this call appended and sets `node` itself.
 */
const kDecimalName = /^(?:0|[1-9][0-9]*)$/;

/** The order in which MongoDB applies the fields of one `$set`: numeric names numerically, others by bytes. */
function compareUpdateFieldNames(a: string, b: string): number {
  if (kDecimalName.test(a) && kDecimalName.test(b)) return Number(a) - Number(b);
  return compareUtf8(a, b);
}

function collectChanges(node: MinMaxNode, side: Side, path: string[], out: SetOp[]): boolean {
  const children = node.children ?? kNoChildren;
  const slot = SLOT[side];
  // A `$set` of a missing field appends it: new children must all come after the old ones. And MongoDB
  // applies the fields of one `$set` in name order, so new object fields must also be in name order;
  // otherwise the node is set whole, which keeps the order on any server.
  let sawNew = false;
  let lastNew: string | undefined;
  const isObject = node[slot.kind] !== 'array';
  for (const child of children) {
    if (child[slot.kind] === 'unset') continue;
    if (!child[slot.emitted]) {
      sawNew = true;
      const name = child.name as string;
      if (isObject && lastNew !== undefined && compareUpdateFieldNames(lastNew, name) > 0) return true;
      lastNew = name;
    } else if (sawNew) return true;
  }

  const start = out.length;
  const isArray = node[slot.kind] === 'array';
  let position = 0;
  for (const child of children) {
    const kind = child[slot.kind];
    if (kind === 'unset') {
      child[slot.emitted] = false;
      continue;
    }
    const segment = isArray ? String(position) : (child.name as string);
    position++;
    const safe = isArray || child.pathSafe;
    if (child[slot.updated] || !child[slot.emitted]) {
      if (!safe) {
        out.length = start;
        return true;
      }
      path.push(segment);
      out.push({ path: pathOf(path), value: buildSlot(child, side, true) });
      path.pop();
    } else if (kind === 'object' || kind === 'array') {
      const before = out.length;
      path.push(segment);
      const whole = collectChanges(child, side, path, out);
      if (!safe && (whole || out.length > before)) {
        // Nothing below an unsafe segment can be addressed: the parent is replaced instead.
        path.pop();
        out.length = start;
        return true;
      }
      if (whole) {
        out.length = before;
        out.push({ path: pathOf(path), value: buildSlot(child, side, true) });
      }
      path.pop();
    }
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------
// Reopening
// ---------------------------------------------------------------------------------------------------

/**
 * Rebuild a MinMax from a stored bucket's `control.min` and `control.max` (the server's
 * `MinMax::parseFromBSON`: fold `min`, then `max`, into a fresh tree). The stored documents become the
 * baseline of {@link takeUpdates}; if the rebuilt documents differ from them (field order or values, as
 * in buckets written with DocDiff appends or by mixed-schema writers), the next {@link takeUpdates}
 * replaces the differing side as a whole (path `[]`).
 *
 * @param min - stored `control.min`.
 * @param max - stored `control.max`.
 * @returns the rebuilt MinMax.
 * @throws {@link TimeseriesError} `BadValue` for values js-bson cannot write.
 */
export function minMaxFromDocuments(
  min: Readonly<Record<string, unknown>>,
  max: Readonly<Record<string, unknown>>,
): MinMax {
  const mm = createMinMax();
  updateMinMax(mm, min);
  updateMinMax(mm, max);
  const builtMin = buildSlot(mm.root, 'min', true);
  const builtMax = buildSlot(mm.root, 'max', true);
  if (!identical(builtMin, min)) mm.root.minUpdated = true;
  if (!identical(builtMax, max)) mm.root.maxUpdated = true;
  mm.changed = (mm.root.minUpdated ? MIN_CHANGED : 0) | (mm.root.maxUpdated ? MAX_CHANGED : 0);
  return mm;
}

/** The embedded document a value of BSON type object stands for (a js-bson DBRef is expanded). */
function asDocument(value: unknown): Readonly<Record<string, unknown>> {
  return (value as { _bsontype?: unknown })._bsontype === 'DBRef'
    ? dbRefToDocument(value as DBRef)
    : (value as Readonly<Record<string, unknown>>);
}

/** Same BSON: same types, same field names in the same order, equal values. */
function identical(a: unknown, b: unknown): boolean {
  const type = bsonTypeOf(a);
  if (type !== bsonTypeOf(b)) return false;
  if (type === BsonType.array) {
    const x = a as ReadonlyArray<unknown>;
    const y = b as ReadonlyArray<unknown>;
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!identical(x[i] ?? null, y[i] ?? null)) return false;
    return true;
  }
  if (type === BsonType.object) {
    const x = asDocument(a);
    const y = asDocument(b);
    const kx = Object.keys(x).filter((k) => x[k] !== undefined);
    const ky = Object.keys(y).filter((k) => y[k] !== undefined);
    if (kx.length !== ky.length) return false;
    for (let i = 0; i < kx.length; i++) {
      const k = kx[i] as string;
      if (k !== ky[i] || !identical(x[k], y[k])) return false;
    }
    return true;
  }
  return compareBsonValues(a, b) === 0;
}
