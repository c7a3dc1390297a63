import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Side-by-side measurement: candidates are run alternately (A, B, A, B, ...) so that warm-up, GC pressure
 * and machine noise affect them equally; each reports the median of its runs and its ratio to the first.
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

/**
 * Run contenders alternately `runs` times (after one unmeasured warm-up each) and return medians.
 *
 * @param contenders - the functions to compare.
 * @param runs - measured runs per contender.
 */
export async function compare(
  contenders: ReadonlyArray<Contender>,
  runs: number,
): Promise<ContenderResult[]> {
  const times = contenders.map(() => [] as number[]);
  const items = contenders.map(() => 0);
  for (const c of contenders) await c.run();
  for (let r = 0; r < runs; r++) {
    for (let i = 0; i < contenders.length; i++) {
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

/** Print a heading. */
export function heading(title: string): void {
  console.log(`\n## ${title}`);
}

/**
 * A full garbage collection, so that heap readings count live objects only. The benchmarks run under tsx
 * without `--expose-gc`; the flag is set at run time and `gc` taken from a fresh context, which is the
 * documented effect of setting V8 flags after startup (benchmarks only, never the library).
 */
export const collectGarbage: () => void = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();
