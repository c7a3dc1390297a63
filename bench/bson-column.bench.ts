/**
 * BSONColumn benchmark: storage per measurement (compressed bucket vs version-1 bucket vs one document
 * per measurement) and encode/decode throughput, on a TSBS cpu-only-like dataset and on integer counters.
 *
 * Run alone: `npx tsx bench/bson-column.bench.ts [--quick]`; only the per-commit cost of a column:
 * `npx tsx bench/bson-column.bench.ts --commit-cost`.
 */
import { pathToFileURL } from 'node:url';

import { ObjectId, calculateObjectSize } from 'bson';

import {
  BSONColumn,
  BSONColumnBuilder,
  applyBinaryDiff,
} from '../src/bucket-format/bson-column/bson-column.js';
import { compressBucket } from '../src/bucket-format/bucket-compression.js';
import { kCpuMetrics, prng } from './datasets.js';
import { collectGarbage, compare, rate } from './harness.js';
import { Long } from 'bson';

const kIntervalMs = 10_000;
// Granularity "seconds": a bucket spans at most 3600 s, so 360 measurements at a 10 s interval.
const kPerBucket = 360;

interface Dataset {
  readonly name: string;
  readonly meta: Record<string, unknown>;
  readonly times: Date[];
  /** Column name -> values. */
  readonly columns: ReadonlyMap<string, unknown[]>;
}

function times(n: number, start: number): Date[] {
  return Array.from({ length: n }, (_, i) => new Date(start + i * kIntervalMs));
}

/** TSBS cpu-only: host tags as meta; 10 percentages as a bounded random walk with 1–2 decimals. */
function cpuOnly(seed: number): Dataset {
  const r = prng(seed);
  const columns = new Map<string, unknown[]>();
  for (const [k, field] of kCpuMetrics.entries()) {
    const decimals = k % 2 === 0 ? 100 : 10;
    let v = r() * 100;
    columns.set(
      field,
      Array.from({ length: kPerBucket }, () => {
        v = Math.min(100, Math.max(0, v + (r() - 0.5) * 10));
        return Math.round(v * decimals) / decimals;
      }),
    );
  }
  const meta = {
    hostname: `host_${seed}`,
    region: 'eu-central-1',
    datacenter: 'eu-central-1a',
    rack: '6',
    os: 'Ubuntu16.04LTS',
    arch: 'x64',
    team: 'SF',
    service: '19',
    service_version: '1',
    service_environment: 'test',
  };
  return {
    name: 'TSBS cpu-only (10 float metrics)',
    meta,
    times: times(kPerBucket, 1_451_606_400_000),
    columns,
  };
}

/** 10 monotonically increasing integer counters (bytes, packets, errors...). */
function counters(seed: number): Dataset {
  const r = prng(seed);
  const columns = new Map<string, unknown[]>();
  for (let k = 0; k < 10; k++) {
    let v = Math.floor(r() * 1e6);
    const rate = [1, 10, 1000, 100000][k % 4]!;
    columns.set(
      `counter_${k}`,
      Array.from({ length: kPerBucket }, () => (v += Math.floor(r() * rate))),
    );
  }
  return {
    name: 'integer counters (10 int32 metrics)',
    meta: { host: `host_${seed}` },
    times: times(kPerBucket, 1_451_606_400_000),
    columns,
  };
}

function v1Bucket(d: Dataset): Record<string, unknown> {
  const data: Record<string, unknown> = { time: Object.fromEntries(d.times.map((t, i) => [String(i), t])) };
  const min: Record<string, unknown> = { time: d.times[0] };
  const max: Record<string, unknown> = { time: d.times[d.times.length - 1] };
  for (const [field, values] of d.columns) {
    data[field] = Object.fromEntries(values.map((v, i) => [String(i), v]));
    min[field] = values.reduce((a, b) => ((a as number) < (b as number) ? a : b));
    max[field] = values.reduce((a, b) => ((a as number) > (b as number) ? a : b));
  }
  return { _id: new ObjectId(), control: { version: 1, min, max }, meta: d.meta, data };
}

function rowBytes(d: Dataset): number {
  let total = 0;
  for (let i = 0; i < d.times.length; i++) {
    const row: Record<string, unknown> = { _id: new ObjectId(), time: d.times[i], tags: d.meta };
    for (const [field, values] of d.columns) row[field] = values[i];
    total += calculateObjectSize(row);
  }
  return total;
}

function measureStorage(d: Dataset): void {
  const v1 = v1Bucket(d);
  const result = compressBucket(v1, 'time');
  if (result.kind === 'failed') throw result.error;
  const n = d.times.length;
  const fmt = (x: number): string => (x / n).toFixed(1).padStart(8);
  console.log(`  ${d.name}, ${n} measurements per bucket; bytes per measurement:`);
  console.log(`    ${'compressed bucket (v2)'.padEnd(30)}${fmt(result.bytesAfter)}`);
  console.log(`    ${'uncompressed bucket (v1)'.padEnd(30)}${fmt(result.bytesBefore)}`);
  console.log(`    ${'one document per measurement'.padEnd(30)}${fmt(rowBytes(d))}`);
  console.log(
    `    ratios: v1/v2 ${(result.bytesBefore / result.bytesAfter).toFixed(1)}x, rows/v2 ${(rowBytes(d) / result.bytesAfter).toFixed(1)}x`,
  );
}

function measureThroughput(d: Dataset, quick: boolean): void {
  const columns = [d.times as unknown[], ...d.columns.values()];
  const encoded = columns.map((c) => BSONColumn.encode(c));
  const values = columns.reduce((a, c) => a + c.length, 0);
  const minMs = quick ? 200 : 1500;
  const rate = (f: () => void): number => {
    let runs = 0;
    const start = performance.now();
    let elapsed = 0;
    while (elapsed < minMs) {
      f();
      runs++;
      elapsed = performance.now() - start;
    }
    return (runs * values) / (elapsed / 1000);
  };
  const enc = rate(() => {
    for (const c of columns) BSONColumn.encode(c);
  });
  const dec = rate(() => {
    for (const b of encoded) BSONColumn.decode(b);
  });
  const m = (x: number): string => `${(x / 1e6).toFixed(2)} M values/s`;
  console.log(`    encode ${m(enc)}, decode ${m(dec)}`);
}

/** Columns of one full bucket (1000 measurements), one per value kind of the incremental case. */
function incrementalColumns(): ReadonlyArray<{ readonly name: string; readonly values: unknown[] }> {
  const r = prng(3);
  const n = 1000;
  let walk = 50;
  return [
    { name: 'dates (10 s apart)', values: times(n, 1_451_606_400_000) },
    {
      name: 'doubles (2-decimal random walk)',
      values: Array.from({ length: n }, () => {
        walk = Math.min(100, Math.max(0, walk + (r() - 0.5) * 10));
        return Math.round(walk * 100) / 100;
      }),
    },
    { name: 'int32 (counter)', values: Array.from({ length: n }, (_, i) => 1000 + i * 7 + (i % 3)) },
    {
      name: 'objects {a: int32, b: double}',
      values: Array.from({ length: n }, (_, i) => ({ a: i % 10, b: Math.round(r() * 1000) / 10 })),
    },
  ];
}

/**
 * MongoDB 8's write path commits every measurement to an open bucket: per append, either the builder's
 * intermediate() diff (applied to the stored column), or a full re-encode of the column so far (what a
 * store that keeps no encoder state must do). Reports appends per second and the ratio.
 */
async function measureIncremental(quick: boolean): Promise<void> {
  console.log('  appending a 1000-value column one value at a time, a commit after each append:');
  for (const { name, values } of incrementalColumns()) {
    const [diffs, reencode] = await compare(
      [
        {
          name: 'intermediate() per append',
          run: () => {
            const builder = new BSONColumnBuilder();
            let column: Uint8Array = new Uint8Array(0);
            for (const v of values) {
              builder.append(v);
              column = applyBinaryDiff(column, builder.intermediate());
            }
            return values.length;
          },
        },
        {
          name: 'finalize per append',
          run: () => {
            for (let i = 1; i <= values.length; i++) BSONColumn.encode(values.slice(0, i));
            return values.length;
          },
        },
      ],
      quick ? 3 : 9,
    );
    const [reopen, decode] = await compare(
      [
        {
          name: 'fromBinary',
          run: () => {
            BSONColumnBuilder.fromBinary(BSONColumn.encode(values));
            return 1;
          },
        },
        {
          name: 'encode',
          run: () => {
            BSONColumn.encode(values);
            return 1;
          },
        },
      ],
      quick ? 3 : 9,
    );
    if (diffs === undefined || reencode === undefined || reopen === undefined || decode === undefined)
      throw new Error('missing bench result');
    console.log(
      `    ${name.padEnd(32)} intermediate ${rate(diffs.perSecond).padStart(10)}, ` +
        `finalize ${rate(reencode.perSecond).padStart(10)}: ${(diffs.perSecond / reencode.perSecond).toFixed(0)}x; ` +
        `encode+fromBinary ${reopen.medianMs.toFixed(3)} ms vs encode ${decode.medianMs.toFixed(3)} ms`,
    );
  }
}

/** Series of the commit-cost case: one open bucket per series, as in the bulk-loader shape. */
const kCommitSeries = 1000;
/** Commits per series: one measurement per series per `insertMany`, 100 calls. */
const kCommitsPerSeries = 100;

/** One value kind of the commit-cost case: the value series `s` appends at commit `i`. */
interface CommitKind {
  readonly name: string;
  readonly value: (s: number, i: number) => unknown;
}

function commitKinds(): ReadonlyArray<CommitKind> {
  // Per series a 2-decimal random walk, as TSBS cpu-only fields: precomputed so the loop measures the builder.
  const r = prng(5);
  const walks = Array.from({ length: kCommitSeries }, () => {
    let v = r() * 100;
    return Array.from({ length: kCommitsPerSeries }, () => {
      v = Math.min(100, Math.max(0, v + (r() - 0.5) * 10));
      return Math.round(v * 100) / 100;
    });
  });
  const dates = Array.from({ length: kCommitsPerSeries }, (_, i) => new Date(1_451_606_400_000 + i * 10_000));
  const longs = Array.from({ length: kCommitsPerSeries }, (_, i) =>
    Long.fromNumber(5_000_000_000 + i * 1013),
  );
  return [
    { name: 'doubles (2-decimal walk)', value: (s, i) => walks[s]?.[i] },
    { name: 'dates (10 s apart)', value: (_s, i) => dates[i] },
    { name: 'int32 (counter)', value: (s, i) => s * 1000 + i * 7 + (i % 3) },
    { name: 'int64 (Long counter)', value: (_s, i) => longs[i] },
  ];
}

/**
 * The cost a commit pays per column on MongoDB 8's write path: 1 000 open buckets (builders), each
 * commit appends one value to a builder and takes its intermediate() diff, 100 commits per builder.
 * Reports µs per column-commit, against append alone (the floor), and bytes allocated per column-commit
 * (heap growth over one round of 1 000 commits with no collection in between; median of rounds).
 */
async function measureCommitCost(quick: boolean): Promise<void> {
  console.log(
    `  one append + intermediate() per commit, ${kCommitSeries} builders x ${kCommitsPerSeries} commits:`,
  );
  const commits = kCommitSeries * kCommitsPerSeries;
  for (const kind of commitKinds()) {
    const run = (withDiff: boolean) => (): number => {
      const builders = Array.from({ length: kCommitSeries }, () => new BSONColumnBuilder());
      for (let i = 0; i < kCommitsPerSeries; i++) {
        for (let s = 0; s < kCommitSeries; s++) {
          const b = builders[s] as BSONColumnBuilder;
          b.append(kind.value(s, i));
          if (withDiff) b.intermediate();
        }
      }
      return commits;
    };
    const [both, appendOnly] = await compare(
      [
        { name: 'append + intermediate()', run: run(true) },
        { name: 'append only', run: run(false) },
      ],
      quick ? 3 : 9,
    );
    if (both === undefined || appendOnly === undefined) throw new Error('missing bench result');
    const us = (x: { perSecond: number }): string => `${(1e6 / x.perSecond).toFixed(3)} µs`;
    console.log(
      `    ${kind.name.padEnd(26)} append + intermediate() ${us(both)}, append only ${us(appendOnly)}; ` +
        `${allocatedPerCommit(kind).toFixed(0)} B allocated per column-commit, ` +
        `${heapPerBuilder(kind).toFixed(0)} B of heap per builder`,
    );
  }
}

/**
 * Bytes allocated per column-commit: heap growth over one commit of every builder, after a collection,
 * median over the commits (a round small enough that the young generation rarely fills; the median
 * drops the rounds where it did).
 */
function allocatedPerCommit(kind: CommitKind): number {
  const builders = Array.from({ length: kCommitSeries }, () => new BSONColumnBuilder());
  const growth: number[] = [];
  for (let i = 0; i < kCommitsPerSeries; i++) {
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    for (let s = 0; s < kCommitSeries; s++) {
      const b = builders[s] as BSONColumnBuilder;
      b.append(kind.value(s, i));
      b.intermediate();
    }
    growth.push((process.memoryUsage().heapUsed - before) / kCommitSeries);
  }
  growth.sort((a, b) => a - b);
  return growth[growth.length >> 1] ?? 0;
}

/**
 * Heap a builder holds between commits (what an open bucket keeps per field): heap and array buffers
 * after a collection, with 1 000 builders after their 100 commits, against before they were made.
 */
function heapPerBuilder(kind: CommitKind): number {
  const held = (): number => {
    collectGarbage();
    collectGarbage();
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers;
  };
  const before = held();
  const builders = Array.from({ length: kCommitSeries }, () => new BSONColumnBuilder());
  for (let i = 0; i < kCommitsPerSeries; i++) {
    for (let s = 0; s < kCommitSeries; s++) {
      const b = builders[s] as BSONColumnBuilder;
      b.append(kind.value(s, i));
      b.intermediate();
    }
  }
  const perBuilder = (held() - before) / builders.length;
  return perBuilder;
}

/**
 * Print the BSONColumn storage and throughput figures.
 *
 * @param quick - shorter timing loops (for CI smoke runs).
 */
export async function runBsonColumnBench(quick: boolean): Promise<void> {
  console.log('BSONColumn');
  for (const d of [cpuOnly(1), counters(2)]) {
    measureStorage(d);
    measureThroughput(d, quick);
  }
  await measureIncremental(quick);
  await measureCommitCost(quick);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--commit-cost')) await measureCommitCost(process.argv.includes('--quick'));
  else await runBsonColumnBench(process.argv.includes('--quick'));
}
