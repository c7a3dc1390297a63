/**
 * Benchmark datasets.
 *
 * - TSBS cpu-only: N hosts × 10 float metrics every 10 s, meta `{hostname, region, datacenter}`
 *   (https://github.com/timescale/tsbs "cpu-only" use case, shape only).
 * - Sparse sensors: many series with a random subset of fields per measurement.
 */

/** A measurement document. */
export type Doc = Record<string, unknown>;

/** The 10 metrics of the TSBS cpu-only use case. */
export const kCpuMetrics: ReadonlyArray<string> = [
  'usage_user',
  'usage_system',
  'usage_idle',
  'usage_nice',
  'usage_iowait',
  'usage_irq',
  'usage_softirq',
  'usage_steal',
  'usage_guest',
  'usage_guest_nice',
];

/** Deterministic pseudo-random numbers (mulberry32) so every run sees the same data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * TSBS cpu-only measurements in time order (all hosts at t0, then all at t0 + 10 s, ...).
 *
 * @param hosts - number of hosts (series).
 * @param count - number of measurements.
 */
export function tsbsCpuOnly(hosts: number, count: number): Doc[] {
  const random = prng(42);
  const metas = Array.from({ length: hosts }, (_, h) => ({
    hostname: `host_${h}`,
    region: `region_${h % 9}`,
    datacenter: `dc_${h % 27}`,
  }));
  const values = Array.from({ length: hosts }, () => kCpuMetrics.map(() => random() * 100));
  const start = Date.UTC(2026, 0, 1);
  const docs: Doc[] = new Array<Doc>(count);
  for (let i = 0; i < count; i++) {
    const h = i % hosts;
    const tick = Math.floor(i / hosts);
    const doc: Doc = { ts: new Date(start + tick * 10_000), tags: metas[h] };
    const v = values[h] as number[];
    for (let m = 0; m < kCpuMetrics.length; m++) {
      // A random walk with two decimals, as TSBS generates.
      v[m] = Math.min(100, Math.max(0, (v[m] as number) + (random() - 0.5) * 2));
      doc[kCpuMetrics[m] as string] = Math.round((v[m] as number) * 100) / 100;
    }
    docs[i] = doc;
  }
  return docs;
}

/**
 * Sparse sensor measurements: each has a random subset of 8 possible fields.
 *
 * @param sensors - number of series.
 * @param count - number of measurements.
 */
export function sparseSensors(sensors: number, count: number): Doc[] {
  const random = prng(7);
  const start = Date.UTC(2026, 0, 1);
  const docs: Doc[] = new Array<Doc>(count);
  for (let i = 0; i < count; i++) {
    const doc: Doc = { ts: new Date(start + Math.floor(i / sensors) * 5_000), sensor: i % sensors };
    for (let f = 0; f < 8; f++) if (random() < 0.4) doc[`f${f}`] = Math.floor(random() * 1000);
    docs[i] = doc;
  }
  return docs;
}
