/**
 * Deterministic samples for the CLI tests: series reporting at a fixed cadence with values that follow a
 * smooth curve, written as CSV or NDJSON.
 */
import { writeFileSync } from 'node:fs';

/** A sample's shape. */
export interface SampleSpec {
  /** Series. */
  readonly series: number;
  /** Measurements per series. */
  readonly perSeries: number;
  /** Interval between measurements of a series, ms. */
  readonly intervalMs: number;
  /** First time, epoch ms. */
  readonly start: number;
}

/** One measurement of the sample: series `s`, tick `t`. */
function measurement(spec: SampleSpec, s: number, t: number) {
  return {
    ts: new Date(spec.start + t * spec.intervalMs).toISOString(),
    sensor: `s${s}`,
    temp: Math.round((20 + 5 * Math.sin(t / 60 + s)) * 10) / 10,
    load: (t * 7 + s * 3) % 100,
  };
}

/** Measurements in arrival order: every series at tick 0, then every series at tick 1, ... */
export function sampleRows(spec: SampleSpec): Array<ReturnType<typeof measurement>> {
  const rows: Array<ReturnType<typeof measurement>> = [];
  for (let t = 0; t < spec.perSeries; t++)
    for (let s = 0; s < spec.series; s++) rows.push(measurement(spec, s, t));
  return rows;
}

/** Write the sample as CSV (header `ts,sensor,temp,load`). */
export function writeCsvSample(path: string, spec: SampleSpec): void {
  const lines = ['ts,sensor,temp,load'];
  for (const r of sampleRows(spec)) lines.push(`${r.ts},${r.sensor},${r.temp},${r.load}`);
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** Write the sample as NDJSON with Extended JSON dates. */
export function writeNdjsonSample(path: string, spec: SampleSpec): void {
  const lines = sampleRows(spec).map((r) => JSON.stringify({ ...r, ts: { $date: r.ts } }));
  writeFileSync(path, `${lines.join('\n')}\n`);
}
