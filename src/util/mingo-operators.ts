/**
 * The mingo operators whose answers differ from the server's, replaced with the server's semantics (the
 * context in `mingo-pipeline.ts` holds them in place of mingo's own):
 *
 * | operator | mingo | the server (and here) |
 * |---|---|---|
 * | `$top`, `$bottom` | a one-element array | the element |
 * | `$eq` `$ne` `$gt` `$gte` `$lt` `$lte` `$cmp` | values of different types neither equal nor ordered | BSON order across types, a missing value below null |
 * | `$push`, `$addToSet` | a missing value pushed as `null` | a missing value skipped |
 * | `$stdDevSamp`, `$stdDevPop` | NaN for too few values | `null` |
 * | `$covariancePop`, `$covarianceSamp` | NaN once a value is missing | pairs with a non-number left out |
 * | `$bucket` | a value equal to a boundary in the bucket below; empty buckets output | `[lower, upper)`; only buckets with documents |
 * | `$dateTrunc` with `timezone` | the local midnight of the UTC date | truncated in local time; `'UTC'`, `'GMT'`, any IANA name |
 * | `$dateAdd`, `$dateSubtract` | months overflowing into the next; days of 24 hours | the month's last day; days on the local calendar |
 *
 * @packageDocumentation
 */
import { evalExpr } from 'mingo/core';
import * as accumulatorOperators from 'mingo/operators/accumulator';
import * as expressionOperators from 'mingo/operators/expression';
import * as pipelineOperators from 'mingo/operators/pipeline';
import { unique } from 'mingo/util';

import { TimeseriesError } from '../errors.js';
import { bsonNumberValue, compareBsonValues, isPlainObject } from './bson-value.js';

type AccumulatorArguments = Parameters<typeof accumulatorOperators.$push>;
type ExpressionArguments = Parameters<typeof expressionOperators.$gt>;
type PipelineArguments = Parameters<typeof pipelineOperators.$group>;
type TopNArguments = Parameters<typeof accumulatorOperators.$topN>;

/** The server's `$top`: the first output by the sort, not an array of it. */
function $top(coll: TopNArguments[0], expr: Omit<TopNArguments[1], 'n'>, options: TopNArguments[2]): unknown {
  return accumulatorOperators.$topN(coll, { ...expr, n: 1 }, options)[0];
}

/** The server's `$bottom`: the last output by the sort, not an array of it. */
function $bottom(
  coll: TopNArguments[0],
  expr: Omit<TopNArguments[1], 'n'>,
  options: TopNArguments[2],
): unknown {
  return accumulatorOperators.$bottomN(coll, { ...expr, n: 1 }, options)[0];
}

/** What a missing value is pushed as by {@link $push}'s wrapped expression, then left out. */
const kMissing: object = Object.freeze({});

/**
 * The values of `expr` over the documents, a missing one left out (the server's `$push`): mingo's own,
 * on an expression that marks a missing value (mingo pushes it as `null`, like a null one).
 */
function $push(
  coll: AccumulatorArguments[0],
  expr: AccumulatorArguments[1],
  options: AccumulatorArguments[2],
): unknown[] {
  const marked = {
    $cond: { if: { $eq: [{ $type: expr }, 'missing'] }, then: { $literal: kMissing }, else: expr },
  };
  return accumulatorOperators.$push(coll, marked, options).filter((value) => value !== kMissing);
}

/** The distinct values of `expr`, a missing one left out. */
function $addToSet(
  coll: AccumulatorArguments[0],
  expr: AccumulatorArguments[1],
  options: AccumulatorArguments[2],
): unknown[] {
  return unique($push(coll, expr, options));
}

/** The numbers among `values` (of any BSON numeric type) as JS numbers. */
function numbersOf(values: ReadonlyArray<unknown>): number[] {
  const out: number[] = [];
  for (const v of values) {
    const n = bsonNumberValue(v);
    if (n !== undefined) out.push(n);
  }
  return out;
}

/** Standard deviation, or `null` with fewer numbers than it needs (one for the population, two sampled). */
function standardDeviation(values: ReadonlyArray<number>, sampled: boolean): number | null {
  const n = values.length;
  if (n === 0 || (sampled && n < 2)) return null;
  let mean = 0;
  for (const v of values) mean += v;
  mean /= n;
  let squares = 0;
  for (const v of values) squares += (v - mean) * (v - mean);
  return Math.sqrt(squares / (sampled ? n - 1 : n));
}

const $stdDevPop = (...args: AccumulatorArguments): number | null =>
  standardDeviation(numbersOf($push(...args)), false);
const $stdDevSamp = (...args: AccumulatorArguments): number | null =>
  standardDeviation(numbersOf($push(...args)), true);

/** Covariance of the pairs whose two values are numbers; `null` with too few of them. */
function covariance(pairs: ReadonlyArray<unknown>, sampled: boolean): number | null {
  const xs: number[] = [];
  const ys: number[] = [];
  for (const pair of pairs) {
    if (!Array.isArray(pair) || pair.length !== 2) continue;
    const x = bsonNumberValue(pair[0]);
    const y = bsonNumberValue(pair[1]);
    if (x === undefined || y === undefined) continue;
    xs.push(x);
    ys.push(y);
  }
  const n = xs.length;
  if (n === 0 || (sampled && n < 2)) return null;
  let mx = 0;
  let my = 0;
  for (let i = 0; i < n; i++) {
    mx += xs[i] as number;
    my += ys[i] as number;
  }
  mx /= n;
  my /= n;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += ((xs[i] as number) - mx) * ((ys[i] as number) - my);
  return sum / (sampled ? n - 1 : n);
}

const $covariancePop = (...args: AccumulatorArguments): number | null => covariance($push(...args), false);
const $covarianceSamp = (...args: AccumulatorArguments): number | null => covariance($push(...args), true);

/**
 * A comparison expression (`$eq`, `$gt`...) with the server's semantics: the two operands compared in
 * BSON order across types (a string is above every number, null and a missing field below them, a
 * missing field below null: `{$eq: ['$missing', null]}` is false), where mingo compared only values of one
 * type and answered `false` otherwise.
 */
function comparison(name: string, test: (c: number) => boolean) {
  return (
    obj: ExpressionArguments[0],
    expr: ExpressionArguments[1],
    options: ExpressionArguments[2],
  ): boolean => test(compareBsonValues(...twoArguments(name, evalExpr(obj, expr, options))));
}

/** The two operands of a comparison, or the server's arity error. */
function twoArguments(name: string, args: unknown): [unknown, unknown] {
  if (!Array.isArray(args) || args.length !== 2) {
    const n = Array.isArray(args) ? args.length : 1;
    throw new TimeseriesError(
      'Location16020',
      `Expression ${name} takes exactly 2 arguments. ${n} were passed in.`,
    );
  }
  return [args[0], args[1]];
}

/** The server's `$cmp`: -1, 0 or 1 by BSON order across types. */
function $cmp(
  obj: ExpressionArguments[0],
  expr: ExpressionArguments[1],
  options: ExpressionArguments[2],
): number {
  return Math.sign(compareBsonValues(...twoArguments('$cmp', evalExpr(obj, expr, options))));
}

/**
 * The server's `$bucket`, as its documentation defines it: a `$group` whose `_id` is the lower boundary of
 * the bucket `[lower, upper)` holding the `groupBy` value (or `default`), then a `$sort` on `_id`: a
 * value equal to a boundary opens its bucket, and a bucket without documents is not output.
 */
function $bucket(
  collection: PipelineArguments[0],
  expr: unknown,
  options: PipelineArguments[2],
): ReturnType<typeof pipelineOperators.$group> {
  if (!isPlainObject(expr) || !Array.isArray(expr.boundaries) || expr.boundaries.length < 2) {
    throw new TimeseriesError(
      'Location40192',
      "The $bucket 'boundaries' field must be an array of at least 2 values",
    );
  }
  const boundaries = expr.boundaries as unknown[];
  for (let i = 1; i < boundaries.length; i++) {
    if (compareBsonValues(boundaries[i - 1], boundaries[i]) >= 0) {
      throw new TimeseriesError(
        'Location40194',
        "The 'boundaries' option to $bucket must be sorted in ascending order",
      );
    }
  }
  const branches = boundaries.slice(0, -1).map((lower, i) => ({
    case: {
      $and: [
        { $gte: [expr.groupBy, { $literal: lower }] },
        { $lt: [expr.groupBy, { $literal: boundaries[i + 1] }] },
      ],
    },
    then: { $literal: lower },
  }));
  const hasDefault = Object.prototype.hasOwnProperty.call(expr, 'default');
  const id = { $switch: { branches, ...(hasDefault ? { default: { $literal: expr.default } } : {}) } };
  const output = isPlainObject(expr.output) ? expr.output : { count: { $sum: 1 } };
  const grouped = pipelineOperators.$group(collection, { _id: id, ...output }, options);
  return pipelineOperators.$sort(grouped, { _id: 1 }, options);
}

/** A fixed UTC offset in a `timezone` argument: `+01`, `-0530`, `+05:30`. */
const kOffset = /^([+-])(\d{2}):?(\d{2})?$/u;

/** The `Intl` formatter of each time zone named so far (one per name; formatters are costly to make). */
const formatters = new Map<string, Intl.DateTimeFormat>();

/**
 * The offset from UTC, in ms, of `timezone` at the instant `ms`: a fixed offset, or an IANA name (with
 * `'UTC'`, `'GMT'` and `'Etc/*'`), as the server's time zone database knows them.
 *
 * @throws {@link TimeseriesError} `Location40485` for a name no time zone has.
 */
function offsetAt(timezone: string, ms: number): number {
  const fixed = kOffset.exec(timezone);
  if (fixed !== null) {
    const minutes = Number(fixed[2]) * 60 + Number(fixed[3] ?? 0);
    return (fixed[1] === '-' ? -minutes : minutes) * 60_000;
  }
  let format = formatters.get(timezone);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: timezone,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      throw new TimeseriesError('Location40485', `unrecognized time zone identifier: "${timezone}"`);
    }
    formatters.set(timezone, format);
  }
  const parts: Record<string, number> = {};
  for (const part of format.formatToParts(new Date(ms))) parts[part.type] = Number(part.value);
  const wall = Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  // The formatter drops the milliseconds: the offset is a whole number of seconds.
  return wall - (ms - (((ms % 1000) + 1000) % 1000));
}

/**
 * The server's `$dateTrunc` with a `timezone`: the date is truncated in local time (its wall clock in that
 * zone, bins counted from 2000-01-01 there) and the result is the UTC instant of that local time. mingo
 * truncated the UTC date and shifted the result by the offset, so a reading after local midnight but
 * before UTC midnight landed in the day before. Without a time zone, mingo's own (which is right in UTC).
 */
function $dateTrunc(
  obj: ExpressionArguments[0],
  expr: ExpressionArguments[1],
  options: ExpressionArguments[2],
): unknown {
  const args = evalExpr(obj, expr, options) as Record<string, unknown> | null;
  const timezone = isPlainObject(args) ? args.timezone : undefined;
  if (timezone === undefined || timezone === null) return expressionOperators.$dateTrunc(obj, expr, options);
  if (typeof timezone !== 'string') {
    throw new TimeseriesError(
      'Location40517',
      `timezone must evaluate to a string, found ${typeof timezone}`,
    );
  }
  const date = (args as Record<string, unknown>).date;
  if (date === undefined || date === null) return null;
  if (!(date instanceof Date)) return expressionOperators.$dateTrunc(obj, expr, options);
  const ms = date.getTime();
  const wall = ms + offsetAt(timezone, ms);
  const { date: _date, timezone: _timezone, ...rest } = args as Record<string, unknown>;
  const truncated = expressionOperators.$dateTrunc(obj, { ...literals(rest), date: new Date(wall) }, options);
  if (!(truncated instanceof Date)) return truncated;
  return new Date(fromWallClock(timezone, truncated.getTime()));
}

/** The UTC instant whose wall clock in `timezone` is `local` (the offset of that instant, not another's). */
function fromWallClock(timezone: string, local: number): number {
  return local - offsetAt(timezone, local - offsetAt(timezone, local));
}

/** Milliseconds of the units `$dateAdd` adds as elapsed time. */
const kElapsedUnits: Readonly<Record<string, number>> = {
  millisecond: 1,
  second: 1000,
  minute: 60_000,
  hour: 3_600_000,
};
/** Months of the units `$dateAdd` adds on the calendar. */
const kMonthUnits: Readonly<Record<string, number>> = { month: 1, quarter: 3, year: 12 };

/**
 * The server's `$dateAdd` (and `$dateSubtract`, with `sign` -1): hours and smaller units are elapsed time;
 * days and weeks move the wall clock in `timezone` (a day across a daylight saving change is 23 or 25
 * hours); months, quarters and years move the calendar month there, a day past the new month's end being
 * its last day (January 31 plus a month is February 28 or 29). mingo added months with `Date`'s overflow
 * (March 2 or 3) and days as 24 hours. Arguments it would refuse are left to it, for its errors.
 */
function dateAddition(sign: 1 | -1, mingoOperator: typeof expressionOperators.$dateAdd) {
  return (
    obj: ExpressionArguments[0],
    expr: ExpressionArguments[1],
    options: ExpressionArguments[2],
  ): unknown => {
    const args = evalExpr(obj, expr, options) as Record<string, unknown> | null;
    if (!isPlainObject(args)) return mingoOperator(obj, expr, options);
    const { startDate, unit, amount } = args;
    const timezone = args.timezone === undefined ? 'UTC' : args.timezone;
    if (startDate === null || startDate === undefined || unit === null || unit === undefined) return null;
    if (amount === null || amount === undefined || timezone === null) return null;
    const n = bsonNumberValue(amount);
    if (!(startDate instanceof Date) || typeof unit !== 'string' || typeof timezone !== 'string') {
      return mingoOperator(obj, expr, options);
    }
    if (n === undefined || !Number.isInteger(n)) return mingoOperator(obj, expr, options);
    const ms = startDate.getTime();
    const elapsed = kElapsedUnits[unit];
    if (elapsed !== undefined) return new Date(ms + sign * n * elapsed);
    const wall = ms + offsetAt(timezone, ms);
    if (unit === 'day' || unit === 'week') {
      return new Date(fromWallClock(timezone, wall + sign * n * (unit === 'week' ? 7 : 1) * 86_400_000));
    }
    const months = kMonthUnits[unit];
    if (months === undefined) return mingoOperator(obj, expr, options);
    const d = new Date(wall);
    const target = d.getUTCFullYear() * 12 + d.getUTCMonth() + sign * n * months;
    const year = Math.floor(target / 12);
    const month = target - year * 12;
    const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
    const moved = new Date(wall);
    moved.setUTCFullYear(year, month, Math.min(d.getUTCDate(), lastDay));
    return new Date(fromWallClock(timezone, moved.getTime()));
  };
}

/** Evaluated arguments passed on as literals (a string starting with `$` is not read as a path again). */
function literals(args: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(args)) out[name] = { $literal: args[name] };
  return out;
}

/** Accumulators (also window functions) replaced. */
export const kAccumulators: Readonly<Record<string, (...args: AccumulatorArguments) => unknown>> = {
  $top: $top as (...args: AccumulatorArguments) => unknown,
  $bottom: $bottom as (...args: AccumulatorArguments) => unknown,
  $push,
  $addToSet,
  $stdDevPop,
  $stdDevSamp,
  $covariancePop,
  $covarianceSamp,
};

/** Expression operators replaced. */
export const kExpressions: Readonly<Record<string, (...args: ExpressionArguments) => unknown>> = {
  $eq: comparison('$eq', (c) => c === 0),
  $ne: comparison('$ne', (c) => c !== 0),
  $gt: comparison('$gt', (c) => c > 0),
  $gte: comparison('$gte', (c) => c >= 0),
  $lt: comparison('$lt', (c) => c < 0),
  $lte: comparison('$lte', (c) => c <= 0),
  $cmp,
  $dateTrunc,
  $dateAdd: dateAddition(1, expressionOperators.$dateAdd),
  $dateSubtract: dateAddition(-1, expressionOperators.$dateSubtract),
};

/** Pipeline stages replaced. */
export const kStages: Readonly<Record<string, typeof pipelineOperators.$group>> = {
  $bucket,
};
