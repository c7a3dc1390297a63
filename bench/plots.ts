/**
 * SVG plots of a benchmark run's own figures (bench/plots/*.svg, shown in bench/README.md): Vega-Lite
 * specifications compiled to Vega and rendered server-side, without a browser or canvas. The figures are
 * saved beside them (`figures.json`), so `npx tsx bench/plots.ts` renders the plots of the last full run
 * again after a change to a plot.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { parse, View } from 'vega';
import { compile } from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';

import type { Figure, HeadlineRatio } from './harness.js';

const kWidth = 520;
const kHeight = 260;

async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

function valuesOf(figures: ReadonlyArray<Figure>, chart: string): Array<Record<string, unknown>> {
  return figures
    .filter((f) => f.chart === chart)
    .map((f, order) => ({ series: f.series, x: f.x, y: f.y, order }));
}

function scalingSpec(figures: ReadonlyArray<Figure>, subtitle: string): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Cost per measurement by number of series', subtitle },
    width: kWidth,
    height: kHeight,
    data: { values: valuesOf(figures, 'scaling') },
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'x', type: 'quantitative', scale: { type: 'log' }, title: 'series (log scale)' },
      y: {
        field: 'y',
        type: 'quantitative',
        scale: { type: 'log' },
        title: 'ns per measurement (log scale)',
      },
      color: { field: 'series', type: 'nominal', title: null },
    },
  };
}

function concurrencySpec(figures: ReadonlyArray<Figure>, subtitle: string): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Throughput by number of concurrent writers', subtitle },
    width: kWidth,
    height: kHeight,
    data: { values: valuesOf(figures, 'concurrency') },
    transform: [{ calculate: 'datum.y / 1000', as: 'k' }],
    mark: 'bar',
    encoding: {
      x: { field: 'x', type: 'ordinal', title: 'writers', axis: { labelAngle: 0 } },
      xOffset: { field: 'series', type: 'nominal' },
      y: { field: 'k', type: 'quantitative', title: 'thousand measurements/s' },
      color: { field: 'series', type: 'nominal', title: null },
    },
  };
}

function compressionSpec(figures: ReadonlyArray<Figure>, subtitle: string): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Bytes per measurement', subtitle },
    width: kWidth,
    height: kHeight,
    data: { values: valuesOf(figures, 'compression') },
    mark: 'bar',
    encoding: {
      x: { field: 'series', type: 'nominal', title: null, axis: { labelAngle: 0 } },
      xOffset: { field: 'x', type: 'nominal', sort: { field: 'order' } },
      y: { field: 'y', type: 'quantitative', title: 'bytes per measurement (BSON)' },
      color: { field: 'x', type: 'nominal', title: 'stored as', sort: { field: 'order' } },
    },
  };
}

function memorySpec(figures: ReadonlyArray<Figure>, subtitle: string): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Heap held', subtitle },
    width: kWidth / 2 - 40,
    height: kHeight,
    data: { values: valuesOf(figures, 'memory') },
    mark: 'bar',
    encoding: {
      column: { field: 'x', type: 'nominal', title: null },
      x: { field: 'series', type: 'nominal', title: null, axis: { labels: false, ticks: false } },
      y: { field: 'y', type: 'quantitative', title: 'bytes' },
      color: { field: 'series', type: 'nominal', title: null },
    },
    resolve: { scale: { y: 'independent' } },
  };
}

/** A target like `>= 0.75x` or `<= 3x` as a number, or `undefined`. */
function targetValue(target: string): number | undefined {
  const match = /([\d.]+)x/.exec(target);
  return match === null ? undefined : Number(match[1]);
}

function ratiosSpec(headlines: ReadonlyArray<HeadlineRatio>, subtitle: string): TopLevelSpec {
  // Throughput ratios with a target (higher is better) share one scale; the spread (lower is better) is
  // in the scaling plot, and the classic-pattern ratio would flatten the others.
  const values = headlines
    .filter((h) => h.target.startsWith('>=') && targetValue(h.target) !== undefined)
    .map((h) => ({
      name: `${h.name} (target ${h.target})`,
      format: h.format,
      ratio: h.ratio,
      target: targetValue(h.target),
    }));
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Throughput vs js-bson (bars) and targets (black ticks)', subtitle },
    width: kWidth,
    data: { values },
    encoding: {
      y: { field: 'name', type: 'nominal', title: null, sort: null, axis: { labelLimit: 360 } },
    },
    layer: [
      {
        mark: 'bar',
        encoding: {
          x: { field: 'ratio', type: 'quantitative', title: 'ratio (x)' },
          yOffset: { field: 'format', type: 'nominal' },
          color: { field: 'format', type: 'nominal', title: null },
        },
      },
      {
        mark: { type: 'tick', color: 'black', thickness: 2 },
        encoding: { x: { field: 'target', type: 'quantitative' } },
      },
    ],
  };
}

/** What a run saves beside its plots. */
interface SavedRun {
  readonly subtitle: string;
  readonly figures: ReadonlyArray<Figure>;
  readonly headlines: ReadonlyArray<HeadlineRatio>;
}

const kFiguresFile = 'figures.json';

/**
 * Render the plots of a run into `dir`, and save its figures there.
 *
 * @param figures - every figure of the run.
 * @param headlines - every headline ratio of the run.
 * @param dir - output folder (created if missing).
 * @param subtitle - when and where the run was made.
 * @returns the paths written.
 */
export async function writePlots(
  figures: ReadonlyArray<Figure>,
  headlines: ReadonlyArray<HeadlineRatio>,
  dir: string,
  subtitle: string,
): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const saved: SavedRun = { subtitle, figures, headlines };
  await writeFile(join(dir, kFiguresFile), `${JSON.stringify(saved, null, 1)}\n`);
  const plots: ReadonlyArray<[string, TopLevelSpec]> = [
    ['ratios.svg', ratiosSpec(headlines, subtitle)],
    ['scaling.svg', scalingSpec(figures, subtitle)],
    ['concurrency.svg', concurrencySpec(figures, subtitle)],
    ['compression.svg', compressionSpec(figures, subtitle)],
    ['memory.svg', memorySpec(figures, subtitle)],
  ];
  const written: string[] = [];
  for (const [name, spec] of plots) {
    const path = join(dir, name);
    await writeFile(path, `${await renderSvg(spec)}\n`);
    written.push(path);
  }
  return written;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = fileURLToPath(new URL('./plots/', import.meta.url));
  const saved = JSON.parse(await readFile(join(dir, kFiguresFile), 'utf8')) as SavedRun;
  console.log(await writePlots(saved.figures, saved.headlines, dir, saved.subtitle));
}
