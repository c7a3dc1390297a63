/**
 * `npm run bench` (`-- --quick` for a short run): every benchmark, each printing ratios measured side by
 * side in this process, then a summary table of the headline ratios and (full runs, or `--plots`) the
 * plots in bench/plots/. See bench/README.md for what each number means and the latest results.
 */
import { cpus } from 'node:os';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import { runBsonColumnBench } from './bson-column.bench.js';
import { runCompressionBench } from './compression.bench.js';
import { figures, headlines, ratio } from './harness.js';
import { runIngestBench } from './ingest.bench.js';
import { runMemoryBench } from './memory.bench.js';
import { writePlots } from './plots.js';
import { runReaderBench } from './reader.bench.js';
import { runReopeningBench } from './reopening.bench.js';
import { runWritePathBench } from './write-path.bench.js';

const quick = process.argv.includes('--quick');
const t = performance.now();
const started = new Date().toISOString();
console.log(`tsbuckets benchmarks (${quick ? 'quick' : 'full'}), node ${process.version}, ${started}`);
await runIngestBench(quick);
await runWritePathBench(quick);
await runMemoryBench();
await runReaderBench(quick);
await runCompressionBench(quick);
await runReopeningBench(quick);
await runBsonColumnBench(quick);
await (await import('./rollups.bench.js')).runRollupsBench(quick);

console.log('\n## summary: headline ratios (measured side by side in this run)\n');
console.log('| shape | format | ratio | target | measured |');
console.log('|---|---|---|---|---|');
for (const h of headlines) {
  console.log(
    `| ${h.name} | ${h.format} | **${ratio(h.ratio)}** | ${h.target === '' ? '—' : h.target} | ${h.detail} |`,
  );
}
const seconds = (performance.now() - t) / 1000;
if (quick && !process.argv.includes('--plots')) {
  console.log('\n(quick run: plots are written by full runs, or with --plots)');
} else {
  const dir = fileURLToPath(new URL('./plots/', import.meta.url));
  const subtitle = `npm run bench, ${started.slice(0, 16).replace('T', ' ')} UTC, node ${process.version}, ${cpus().length} cores`;
  const written = await writePlots(figures, headlines, dir, subtitle);
  console.log(`\nplots: ${written.map((p) => relative(process.cwd(), p)).join(', ')}`);
}
console.log(`\ntotal ${seconds.toFixed(1)} s`);
