/**
 * What a sample of measurements says about its series: how many, how often each reports (the median
 * interval between its measurements) and how big a measurement is. The granularity advisor derives its
 * candidate spans from the cadence.
 *
 * Series are told apart exactly as the catalog does (the normalised meta's BSON bytes), so two metas that
 * differ only in field order are one series and `1` and `1.0` are two.
 *
 * @packageDocumentation
 */
import { calculateObjectSize } from 'bson';

import { makeBucketMetadata } from '../../catalog/bucket-metadata.js';
import { bsonElementSize } from '../../util/bson-value.js';

/** The profile of a sample. */
export interface SampleProfile {
  /** Measurements in the sample. */
  readonly measurements: number;
  /** Distinct series (meta values; 1 without a metaField). */
  readonly series: number;
  /** Earliest and latest time, epoch milliseconds. */
  readonly firstTime: number;
  readonly lastTime: number;
  /**
   * The median over series (with at least two measurements) of each series' median interval between
   * consecutive measurements, in milliseconds; `undefined` when no series has two measurements at
   * different times.
   */
  readonly cadenceMs: number | undefined;
  /** Mean BSON size of a measurement without its meta, in bytes. */
  readonly meanMeasurementBytes: number;
  /** Measurements earlier than the one before them in the same series (out of order). */
  readonly outOfOrder: number;
}

/**
 * The median of numbers (the lower middle for an even count).
 *
 * @param values - numbers; sorted in place.
 * @returns the median, or `undefined` for no numbers.
 */
export function median(values: number[]): number | undefined {
  if (values.length === 0) return undefined;
  values.sort((a, b) => a - b);
  return values[(values.length - 1) >> 1];
}

/**
 * Profile a sample.
 *
 * @param docs - measurements in arrival order, their time field a `Date`.
 * @param timeField - the time field.
 * @param metaField - the metaField, if any.
 * @returns the profile.
 */
export function profileSample(
  docs: ReadonlyArray<Readonly<Record<string, unknown>>>,
  timeField: string,
  metaField: string | undefined,
): SampleProfile {
  const times = new Map<string, number[]>();
  let firstTime = Infinity;
  let lastTime = -Infinity;
  let bytes = 0;
  let outOfOrder = 0;
  for (const doc of docs) {
    const time = (doc[timeField] as Date).getTime();
    firstTime = Math.min(firstTime, time);
    lastTime = Math.max(lastTime, time);
    const meta = metaField === undefined ? undefined : doc[metaField];
    bytes += calculateObjectSize(doc);
    if (metaField !== undefined && meta !== undefined) bytes -= bsonElementSize(metaField, meta);
    const key = makeBucketMetadata(meta).key;
    const series = times.get(key);
    if (series === undefined) {
      times.set(key, [time]);
      continue;
    }
    if (time < (series.at(-1) ?? time)) outOfOrder++;
    series.push(time);
  }
  const medians: number[] = [];
  for (const series of times.values()) {
    series.sort((a, b) => a - b);
    const intervals: number[] = [];
    let previous = series[0] ?? 0;
    for (const time of series) {
      if (time > previous) intervals.push(time - previous);
      previous = time;
    }
    const m = median(intervals);
    if (m !== undefined) medians.push(m);
  }
  return {
    measurements: docs.length,
    series: times.size,
    firstTime: docs.length === 0 ? 0 : firstTime,
    lastTime: docs.length === 0 ? 0 : lastTime,
    cadenceMs: median(medians),
    meanMeasurementBytes: docs.length === 0 ? 0 : bytes / docs.length,
    outOfOrder,
  };
}
