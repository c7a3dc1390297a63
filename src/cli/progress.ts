/**
 * The progress bar of long commands (`demo`, `ingest`), drawn by `cli-progress` on standard error and
 * only when standard error is a terminal: piped or redirected output stays clean, and standard output
 * carries only the results.
 *
 * @packageDocumentation
 */
import type { Writable } from 'node:stream';

import { SingleBar } from 'cli-progress';

/** A running progress display. */
export interface Progress {
  /**
   * Report how far the work has got.
   *
   * @param value - work done, in the unit of the total.
   * @param payload - other values named in the format (`measurements`).
   */
  update(value: number, payload?: Readonly<Record<string, unknown>>): void;
  /** Remove the bar (the line is left complete). */
  stop(): void;
}

/** What the bar counts. */
export interface ProgressSpec {
  /** Total work, or `undefined` when unknown (standard input): then no bar, no ETA. */
  readonly total: number | undefined;
  /** The unit of the counted work, shown after the rate (`measurements`, `bytes`). */
  readonly unit: 'measurements' | 'bytes';
  /** Where to draw; the bar is drawn only when it is a TTY. */
  readonly stream: Writable & { readonly isTTY?: boolean };
}

const kNoProgress: Progress = Object.freeze({ update: () => undefined, stop: () => undefined });

/**
 * A progress bar on `spec.stream` when it is a terminal, else a progress that draws nothing.
 *
 * @param spec - total, unit and stream.
 * @returns the progress.
 */
export function startProgress(spec: ProgressSpec): Progress {
  if (spec.stream.isTTY !== true) return kNoProgress;
  const known = spec.total !== undefined && spec.total > 0;
  const format = known
    ? '{bar} {percentage}% | {measurements} measurements | {rate}/s | ETA {eta_formatted}'
    : '{measurements} measurements | {rate}/s';
  const bar = new SingleBar({
    format,
    stream: spec.stream,
    hideCursor: true,
    clearOnComplete: true,
    etaBuffer: 50,
    barsize: 30,
  });
  const started = performance.now();
  bar.start(known ? spec.total : 0, 0, { measurements: '0', rate: '0 measurements' });
  let measurements = 0;
  return {
    update: (value, payload) => {
      const m = payload?.measurements;
      if (typeof m === 'number') measurements = m;
      const seconds = Math.max((performance.now() - started) / 1000, 1e-3);
      const done = spec.unit === 'measurements' ? value : measurements;
      bar.update(known ? value : 0, {
        measurements: measurements.toLocaleString('en-US'),
        rate: `${Math.round(done / seconds).toLocaleString('en-US')} measurements`,
      });
    },
    stop: () => {
      bar.stop();
    },
  };
}
