import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { BucketEngine, TimeseriesError } from '../src/index.js';
import type { BucketEngineOptions } from '../src/index.js';

/**
 * Side-by-side measurement: candidates are run alternately (A, B, A, B, ...) so that warm-up, GC pressure
 * and machine noise affect them equally; each reports the median of its runs and its ratio to the first.
 * Also: the bucket formats this build supports, and the figures every benchmark records for the summary
 * table and the plots.
 */

/** One contender: a name and a function returning the number of items it processed. */
export interface Contender {
  readonly name: string;
  readonly run: () => Promise<number> | number;
}

/** Result of one contender. */
export interface ContenderResult {
  readonly name: string;
  /** Median milliseconds per run. */
  readonly medianMs: number;
  /** Items per second at the median. */
  readonly perSecond: number;
}

function median(xs: ReadonlyArray<number>): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

/** Options of {@link compare}. */
export interface CompareOptions {
  /**
   * Whether each contender first runs once unmeasured.
   *
   * @defaultValue `'yes'`
   */
  readonly warmUp?: 'yes' | 'no';
  /**
   * Time the measured runs may take, in ms: when the warm-up round shows that `runs` rounds would take
   * longer, fewer are made; when not even one fits, the warm-up round is taken as the measurement. Keeps
   * `npm run bench` short on a slow or loaded machine, at the price of noisier medians.
   *
   * @defaultValue no limit
   */
  readonly budgetMs?: number;
  /**
   * Called before each run, outside its timing: `collectGarbage` makes every run start from a collected
   * heap, so that no run pays for the garbage the runs before it left (contenders that keep large heaps
   * otherwise pay for each other's collections, in whatever order they land).
   *
   * @defaultValue nothing
   */
  readonly beforeRun?: () => void;
}

/**
 * Run contenders alternately `runs` times (after one unmeasured warm-up round) and return medians.
 *
 * @param contenders - the functions to compare.
 * @param runs - measured runs per contender (fewer when the budget says so).
 * @param options - warm-up and time budget.
 */
export async function compare(
  contenders: ReadonlyArray<Contender>,
  runs: number,
  options: CompareOptions = {},
): Promise<ContenderResult[]> {
  const times = contenders.map(() => [] as number[]);
  const items = contenders.map(() => 0);
  let rounds = runs;
  if ((options.warmUp ?? 'yes') === 'yes') {
    const warmUpMs: number[] = [];
    for (const [i, c] of contenders.entries()) {
      options.beforeRun?.();
      const t = performance.now();
      items[i] = await c.run();
      warmUpMs.push(performance.now() - t);
    }
    const roundMs = warmUpMs.reduce((a, b) => a + b, 0);
    if (options.budgetMs !== undefined && roundMs * runs > options.budgetMs) {
      rounds = Math.floor(options.budgetMs / roundMs);
      if (rounds === 0) {
        // Not even one more round fits: the warm-up round is the measurement.
        console.log(
          `  (the warm-up round is the measurement: a round takes ${(roundMs / 1000).toFixed(1)} s here)`,
        );
        warmUpMs.forEach((ms, i) => (times[i] as number[]).push(ms));
      } else {
        console.log(`  (${rounds} of ${runs} runs: a round takes ${(roundMs / 1000).toFixed(1)} s here)`);
      }
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < contenders.length; i++) {
      options.beforeRun?.();
      const t = performance.now();
      items[i] = await (contenders[i] as Contender).run();
      (times[i] as number[]).push(performance.now() - t);
    }
  }
  return contenders.map((c, i) => {
    const medianMs = median(times[i] as number[]);
    return { name: c.name, medianMs, perSecond: ((items[i] as number) / medianMs) * 1000 };
  });
}

/** Format a rate like `1.23 M/s`. */
export function rate(perSecond: number): string {
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(2)} M/s`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(1)} k/s`;
  return `${perSecond.toFixed(0)} /s`;
}

/** Format a ratio like `0.84x`. */
export function ratio(x: number): string {
  return `${x.toFixed(2)}x`;
}

/** Print a heading. */
export function heading(title: string): void {
  console.log(`\n## ${title}`);
}

/**
 * A full garbage collection, so that heap readings count live objects only. Uses `gc` when the process
 * runs with `--expose-gc` (bench/memory.bench.ts always does); otherwise the flag is set at run time and
 * `gc` taken from a fresh context, which is the documented effect of setting V8 flags after startup
 * (benchmarks only, never the library).
 */
export const collectGarbage: () => void = (() => {
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === 'function') return exposed;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

// -------------------------------------------------------------------------------------------------------
// Bucket formats
// -------------------------------------------------------------------------------------------------------

/** A bucket format the engine can write, as the server parameter that selects it. */
export interface BucketFormat {
  /** Short label for tables and plots. */
  readonly name: string;
  /** Server parameters selecting it (empty: the build's only format). */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** MongoDB 8.0's format: buckets compressed from their first insert. */
const kFormat8: BucketFormat = {
  name: '8.x compressed',
  parameters: { timeseriesAlwaysUseCompressedBuckets: true },
};
/** MongoDB 5.x-7.x: version 1 while open, compressed on close. */
const kFormat7: BucketFormat = {
  name: '7.x v1-open',
  parameters: { timeseriesAlwaysUseCompressedBuckets: false },
};
/** A build without the parameter writes the 5.x-7.x format only. */
const kOnlyFormat: BucketFormat = { name: '7.x v1-open', parameters: {} };

let detected: ReadonlyArray<BucketFormat> | undefined;

/**
 * The formats this build writes: both, 8.x first, when the engine accepts the server parameter
 * `timeseriesAlwaysUseCompressedBuckets`; else the one it has (an unknown parameter is refused with
 * `InvalidOptions`).
 *
 * @returns the formats to run the ingest shapes with, side by side.
 */
export async function bucketFormats(): Promise<ReadonlyArray<BucketFormat>> {
  if (detected !== undefined) return detected;
  try {
    const probe = new BucketEngine(engineOptions(kFormat8, {}));
    await probe.close();
    detected = [kFormat8, kFormat7];
  } catch (error) {
    if (!TimeseriesError.isTimeseriesError(error) || error.codeName !== 'InvalidOptions') throw error;
    detected = [kOnlyFormat];
  }
  return detected;
}

/**
 * Engine options for a format: its parameter, no idle-bucket expiry (benchmarks measure the write path,
 * not expiry under memory pressure), and anything else given.
 *
 * @param format - from {@link bucketFormats}.
 * @param rest - other options (storage, parameters...).
 */
export function engineOptions(
  format: BucketFormat,
  rest: Omit<BucketEngineOptions, 'parameters'> & { readonly parameters?: Record<string, unknown> },
): BucketEngineOptions {
  // The parameter object is built untyped: a build without the format parameter does not declare it.
  const parameters: Record<string, unknown> = {
    timeseriesIdleBucketExpiryMemoryUsageThreshold: 2 ** 40,
    ...format.parameters,
    ...rest.parameters,
  };
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- needed once parameters are typed per name
  return { ...rest, parameters } as BucketEngineOptions;
}

// -------------------------------------------------------------------------------------------------------
// Figures: what each benchmark measured, for the summary table and the plots
// -------------------------------------------------------------------------------------------------------

/** One number a benchmark measured. */
export interface Figure {
  /** The chart or table it belongs to (`scaling`, `concurrency`, `compression`, `ratios`...). */
  readonly chart: string;
  /** The line or bar group (a format, a dataset, a contender). */
  readonly series: string;
  /** The x value: a count (series, writers) or a category. */
  readonly x: number | string;
  /** The measured value. */
  readonly y: number;
  /** What `y` is, with its unit. */
  readonly unit: string;
}

/** A headline ratio with its target, for the summary table. */
export interface HeadlineRatio {
  readonly name: string;
  readonly format: string;
  readonly ratio: number;
  /** The target, as text (`>= 0.75x`), or `''`. */
  readonly target: string;
  /** What was compared, with rates. */
  readonly detail: string;
}

/** Every figure of a run, in the order they were measured. */
export const figures: Figure[] = [];
/** Every headline ratio of a run. */
export const headlines: HeadlineRatio[] = [];

/**
 * Record a figure.
 *
 * @param figure - the number and where it goes.
 */
export function record(figure: Figure): void {
  figures.push(figure);
}

/**
 * Record and print a headline ratio.
 *
 * @param headline - the ratio, its target and what was compared.
 */
export function recordHeadline(headline: HeadlineRatio): void {
  headlines.push(headline);
  record({ chart: 'ratios', series: headline.format, x: headline.name, y: headline.ratio, unit: 'x' });
  const target = headline.target === '' ? '' : ` (target ${headline.target})`;
  console.log(`  ${headline.format.padEnd(15)} ${ratio(headline.ratio)}${target}: ${headline.detail}`);
}
