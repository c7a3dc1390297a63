/**
 * Rollup specifications: the public spec types of the three layouts (slots, calendar, rolling) and their
 * resolution into a frozen {@link ResolvedRollupSpec}. No server counterpart: rollups replace the
 * pre-aggregations MongoDB users write by hand (docs/rollups.md).
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';
import { isPlainObject } from '../util/bson-value.js';

/** What a rollup keeps per field and slot. `avg` is `sum / count`, computed when read. */
export type RollupAccumulator = 'count' | 'sum' | 'min' | 'max' | 'first' | 'last' | 'avg';

/**
 * How measurements are grouped: a metaField path (`'sensor'`, `'sensor.site'`) giving one group value,
 * or named paths (`{ site: 'sensor.site', kind: 'sensor.kind' }`) giving a group document, as `$group`'s
 * `_id`. A missing value groups as `null`.
 */
export type RollupGroupBy = string | Readonly<Record<string, string>>;

/** One document per group and time slot (the bucket pattern with pre-aggregates). */
export interface SlotsRollupSpec {
  /** The layout. @defaultValue `'slots'` */
  readonly layout?: 'slots';
  /** Slot width: a calendar unit (UTC) or a number of seconds. */
  readonly every: 'minute' | 'hour' | 'day' | 'month' | number;
  /** Grouping. @defaultValue the metaField */
  readonly groupBy?: RollupGroupBy;
  /** Accumulators per measurement field (numeric values only). @defaultValue `{}` (only `count`) */
  readonly fields?: Readonly<Record<string, ReadonlyArray<RollupAccumulator>>>;
}

/** One document per group and period with pre-allocated nested slots (calendar documents). */
export interface CalendarRollupSpec {
  /** The layout. */
  readonly layout: 'calendar';
  /** The period of one document (UTC). */
  readonly period: 'month' | 'day';
  /**
   * The nested levels, coarsest first: for a month `['day']`, `['day', 'hour']` or
   * `['day', 'hour', 'minute']`; for a day `['hour']` or `['hour', 'minute']`.
   */
  readonly levels: ReadonlyArray<'day' | 'hour' | 'minute'>;
  /** Grouping. @defaultValue the metaField */
  readonly groupBy?: RollupGroupBy;
  /** Sums per field (only `'count'` and `'sum'`: every counter starts at zero). @defaultValue `{}` */
  readonly fields?: Readonly<Record<string, ReadonlyArray<'count' | 'sum'>>>;
}

/** Rolling totals (`totals[]`) on an entity document of another collection. */
export interface RollingRollupSpec {
  /** The layout. */
  readonly layout: 'rolling';
  /** Window length: seconds or a duration (`'24h'`, `'90m'`, `'7d'`, `'30s'`), a multiple of `step`. */
  readonly window: string | number;
  /** Entry width: seconds or a duration. */
  readonly step: string | number;
  /** Collection of the entity documents (in the engine's database). */
  readonly target: string;
  /** The metaField path whose value is the entity document's `_id`. */
  readonly key: string;
  /** Fields summed in each entry besides `count`. @defaultValue `[]` */
  readonly sum?: ReadonlyArray<string>;
}

/** A rollup specification. */
export type RollupSpec = SlotsRollupSpec | CalendarRollupSpec | RollingRollupSpec;

/** The layouts. */
export type RollupLayout = 'slots' | 'calendar' | 'rolling';

/** A slot width: a calendar unit or a fixed number of milliseconds. */
export type SlotWidth = { readonly unit: 'month' } | { readonly unit: 'fixed'; readonly ms: number };

/** A measurement field and what is kept of it. */
export interface ResolvedField {
  /** The field name. */
  readonly name: string;
  /** Whether min/max/first/last are kept (count and sum always are). */
  readonly min: boolean;
  readonly max: boolean;
  readonly first: boolean;
  readonly last: boolean;
  /** Whether `avg` is reported on read. */
  readonly avg: boolean;
}

/** A group path resolved against the metaField: the sub-path inside the meta value (`[]` for all). */
export interface ResolvedGroupPath {
  /** The output name (`''` for a single group value). */
  readonly name: string;
  /** Path segments inside the meta value. */
  readonly inMeta: ReadonlyArray<string>;
  /** The measurement path (`sensor.site`). */
  readonly path: string;
}

interface ResolvedCommon {
  /** The rollup name. */
  readonly name: string;
  /** The spec as given (frozen copy), for listRollups. */
  readonly spec: RollupSpec;
  /** Group paths; a single unnamed path yields a scalar group value. */
  readonly groupBy: ReadonlyArray<ResolvedGroupPath>;
  /** Whether the group value is a document (named paths). */
  readonly groupIsDocument: boolean;
  /** Fields, in spec order. */
  readonly fields: ReadonlyArray<ResolvedField>;
}

/** A validated slots spec. */
export interface ResolvedSlotsSpec extends ResolvedCommon {
  readonly layout: 'slots';
  readonly every: SlotWidth;
}

/** A validated calendar spec. */
export interface ResolvedCalendarSpec extends ResolvedCommon {
  readonly layout: 'calendar';
  readonly period: 'month' | 'day';
  readonly levels: ReadonlyArray<'day' | 'hour' | 'minute'>;
}

/** A validated rolling spec. */
export interface ResolvedRollingSpec extends ResolvedCommon {
  readonly layout: 'rolling';
  readonly windowMs: number;
  readonly stepMs: number;
  readonly target: string;
}

/** A validated spec of any layout. */
export type ResolvedRollupSpec = ResolvedSlotsSpec | ResolvedCalendarSpec | ResolvedRollingSpec;

const kAccumulators: ReadonlySet<string> = new Set(['count', 'sum', 'min', 'max', 'first', 'last', 'avg']);
const kName = /^[A-Za-z0-9_-]{1,64}$/u;
const kDuration = /^([1-9][0-9]*)(s|m|h|d)$/u;
const kUnitMs = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const kEveryMs = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;

function invalid(message: string, field: string): TimeseriesError {
  return new TimeseriesError('InvalidOptions', message, { field });
}

/**
 * Validate a rollup name: 1 to 64 letters, digits, `_` or `-` (it becomes part of a collection name).
 *
 * @param name - the name.
 * @throws {@link TimeseriesError} `InvalidOptions`.
 */
export function checkRollupName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !kName.test(name)) {
    throw invalid('rollup name must be 1 to 64 characters from [A-Za-z0-9_-]', 'name');
  }
}

/**
 * Resolve a user's spec against the collection's fields.
 *
 * @param name - the rollup name.
 * @param raw - the spec as given.
 * @param fields - the collection's timeField and metaField.
 * @returns the frozen resolved spec.
 * @throws {@link TimeseriesError} `InvalidOptions` naming the offending option.
 */
export function resolveRollupSpec(
  name: string,
  raw: unknown,
  fields: {
    readonly timeField: string;
    readonly metaField: string | undefined;
    /** The time-series collection's name (a rolling `target` must not be one of its collections). */
    readonly collectionName?: string;
  },
): ResolvedRollupSpec {
  checkRollupName(name);
  if (!isPlainObject(raw)) throw invalid('rollup spec must be an object', 'spec');
  const layout = raw.layout ?? 'slots';
  let copy: unknown;
  try {
    copy = structuredClone(raw);
  } catch (error) {
    // A function or a symbol somewhere in the spec (the checks below would name the option).
    throw new TimeseriesError(
      'InvalidOptions',
      'rollup spec must hold only plain data (no function or symbol)',
      {
        field: 'spec',
        cause: error,
      },
    );
  }
  const spec = deepFreeze(copy as RollupSpec);
  switch (layout) {
    case 'slots': {
      checkKeys(raw, ['layout', 'every', 'groupBy', 'fields']);
      return Object.freeze({
        layout: 'slots' as const,
        name,
        spec,
        every: resolveEvery(raw.every),
        ...resolveGroup(raw.groupBy, fields, 'groupBy'),
        fields: resolveFields(raw.fields, kAccumulators, fields, kSlotsDocumentFields),
      });
    }
    case 'calendar': {
      checkKeys(raw, ['layout', 'period', 'levels', 'groupBy', 'fields']);
      const period = raw.period;
      if (period !== 'month' && period !== 'day')
        throw invalid("'period' must be 'month' or 'day'", 'period');
      const chain = period === 'month' ? ['day', 'hour', 'minute'] : ['hour', 'minute'];
      const levels = raw.levels;
      if (
        !Array.isArray(levels) ||
        levels.length === 0 ||
        levels.length > chain.length ||
        levels.some((l, i) => l !== chain[i])
      ) {
        throw invalid(`'levels' must be a non-empty prefix of ${JSON.stringify(chain)}`, 'levels');
      }
      return Object.freeze({
        layout: 'calendar' as const,
        name,
        spec,
        period,
        levels: Object.freeze([...(levels as Array<'day' | 'hour' | 'minute'>)]),
        ...resolveGroup(raw.groupBy, fields, 'groupBy'),
        fields: resolveFields(raw.fields, new Set(['count', 'sum']), fields, kCalendarDocumentFields),
      });
    }
    case 'rolling': {
      checkKeys(raw, ['layout', 'window', 'step', 'target', 'key', 'sum']);
      const windowMs = resolveDuration(raw.window, 'window');
      const stepMs = resolveDuration(raw.step, 'step');
      if (windowMs % stepMs !== 0) throw invalid("'window' must be a multiple of 'step'", 'window');
      const target = raw.target;
      if (typeof target !== 'string' || !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,119}$/u.test(target)) {
        throw invalid("'target' must be a collection name", 'target');
      }
      // Entities are the user's documents: a collection tsbuckets keeps would be written over (the
      // buckets, the rollup definitions, another rollup's documents).
      const own = fields.collectionName;
      if (
        target.startsWith('system.') ||
        target.startsWith('tsbuckets.') ||
        (own !== undefined &&
          (target === own || target === `${own}.buckets` || target.startsWith(`${own}.rollup.`)))
      ) {
        throw invalid(
          "'target' must not be a collection tsbuckets keeps (system.*, tsbuckets.*, the time-series collection, its buckets or its rollups)",
          'target',
        );
      }
      if (typeof raw.key !== 'string') throw invalid("'key' must be a metaField path", 'key');
      const sums = raw.sum ?? [];
      if (!Array.isArray(sums)) throw invalid("'sum' must be an array of field names", 'sum');
      const fieldsSpec: Record<string, string[]> = {};
      for (const f of sums as unknown[]) {
        if (typeof f !== 'string') throw invalid("'sum' must be an array of field names", 'sum');
        // Entries hold `timestamp` and `count` next to the sums; the entity has `_id` and `totals`.
        if (kRollingDocumentFields.includes(f)) throw invalid(`'${f}' cannot be summed`, 'sum');
        fieldsSpec[f] = ['sum'];
      }
      return Object.freeze({
        layout: 'rolling' as const,
        name,
        spec,
        windowMs,
        stepMs,
        target,
        ...resolveGroup(raw.key, fields, 'key'),
        fields: resolveFields(fieldsSpec, new Set(['sum']), fields, kRollingDocumentFields, 'sum'),
      });
    }
    default:
      throw invalid("'layout' must be 'slots', 'calendar' or 'rolling'", 'layout');
  }
}

function checkKeys(raw: Readonly<Record<string, unknown>>, allowed: ReadonlyArray<string>): void {
  for (const key of Object.keys(raw)) {
    if (!allowed.includes(key)) throw invalid(`unknown rollup option '${key}'`, key);
  }
}

function resolveEvery(every: unknown): SlotWidth {
  if (every === 'month') return { unit: 'month' };
  if (every === 'minute' || every === 'hour' || every === 'day')
    return { unit: 'fixed', ms: kEveryMs[every] };
  if (typeof every === 'number' && Number.isInteger(every) && every > 0 && every <= 31_536_000) {
    return { unit: 'fixed', ms: every * 1000 };
  }
  throw invalid("'every' must be 'minute', 'hour', 'day', 'month' or whole seconds (1 to 31536000)", 'every');
}

function resolveDuration(value: unknown, field: string): number {
  if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value * 1000;
  if (typeof value === 'string') {
    const match = kDuration.exec(value);
    if (match !== null) return Number(match[1]) * kUnitMs[match[2] as keyof typeof kUnitMs];
  }
  throw invalid(`'${field}' must be whole seconds or a duration such as '24h', '90m', '7d', '30s'`, field);
}

/** The fields of a slot document besides the rolled-up ones. */
const kSlotsDocumentFields: ReadonlyArray<string> = ['_id', 'group', 'start', 'count'];
/** The fields of a calendar document besides the rolled-up ones, and its levels' arrays. */
const kCalendarDocumentFields: ReadonlyArray<string> = [
  '_id',
  'group',
  'start',
  'count',
  'days',
  'hours',
  'minutes',
];
/** The fields of an entity and of its `totals` entries besides the summed ones. */
const kRollingDocumentFields: ReadonlyArray<string> = ['_id', 'totals', 'timestamp', 'count'];

function resolveGroupPath(
  path: unknown,
  name: string,
  metaField: string | undefined,
  option: string,
): ResolvedGroupPath {
  if (metaField === undefined) {
    throw invalid(`'${option}' needs a collection with a metaField`, option);
  }
  if (typeof path !== 'string') throw invalid(`'${option}' must be a metaField path`, option);
  const segments = path.split('.');
  if (segments[0] !== metaField || segments.slice(1).some((s) => !isSafeSegment(s))) {
    throw invalid(`'${option}' must be the metaField '${metaField}' or one of its sub-fields`, option);
  }
  return Object.freeze({ name, inMeta: Object.freeze(segments.slice(1)), path });
}

function resolveGroup(
  groupBy: unknown,
  fields: { readonly metaField: string | undefined },
  option: 'groupBy' | 'key',
): { groupBy: ReadonlyArray<ResolvedGroupPath>; groupIsDocument: boolean } {
  if (groupBy === undefined && fields.metaField === undefined) {
    return { groupBy: Object.freeze([]), groupIsDocument: false };
  }
  if (groupBy === undefined || typeof groupBy === 'string') {
    const path = resolveGroupPath(groupBy ?? fields.metaField, '', fields.metaField, option);
    return { groupBy: Object.freeze([path]), groupIsDocument: false };
  }
  if (!isPlainObject(groupBy) || Object.keys(groupBy).length === 0) {
    throw invalid("'groupBy' must be a metaField path or a document of named paths", 'groupBy');
  }
  const paths = Object.keys(groupBy).map((name) => {
    if (!isSafeSegment(name)) throw invalid(`invalid group name '${name}'`, 'groupBy');
    return resolveGroupPath(groupBy[name], name, fields.metaField, 'groupBy');
  });
  return { groupBy: Object.freeze(paths), groupIsDocument: true };
}

function resolveFields(
  raw: unknown,
  allowed: ReadonlySet<string>,
  fields: { readonly timeField: string; readonly metaField: string | undefined },
  documentFields: ReadonlyArray<string>,
  option: 'fields' | 'sum' = 'fields',
): ReadonlyArray<ResolvedField> {
  if (raw === undefined) return Object.freeze([]);
  if (!isPlainObject(raw)) throw invalid("'fields' must map field names to accumulator lists", 'fields');
  return Object.freeze(
    Object.keys(raw).map((name) => {
      if (!isSafeSegment(name) || name === fields.timeField || name === fields.metaField) {
        throw invalid(`'${name}' cannot be rolled up (a top-level measurement field is needed)`, option);
      }
      // The rollup's documents have fields of their own, which a rolled-up field would overwrite.
      if (documentFields.includes(name)) {
        throw invalid(
          `'${name}' cannot be rolled up: the rollup's documents have a field of that name`,
          option,
        );
      }
      const list = raw[name];
      if (!Array.isArray(list) || list.some((a) => typeof a !== 'string' || !allowed.has(a))) {
        throw invalid(`'fields.${name}' must be a list of ${[...allowed].join(', ')}`, `fields.${name}`);
      }
      const has = (a: string): boolean => (list as unknown[]).includes(a);
      return Object.freeze({
        name,
        min: has('min'),
        max: has('max'),
        first: has('first'),
        last: has('last'),
        avg: has('avg'),
      });
    }),
  );
}

/** A field name usable as a plain property: no `$` prefix, no dot, not empty, not an Object.prototype name. */
function isSafeSegment(name: string): boolean {
  return name.length > 0 && !name.startsWith('$') && !name.includes('.') && !(name in Object.prototype);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
