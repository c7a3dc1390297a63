/**
 * `npm run bench` (`-- --quick` for a short run): every benchmark, each printing ratios measured side by
 * side in this process. See bench/README.md for what each number means and the latest results.
 */
import { runBsonColumnBench } from './bson-column.bench.js';
import { runIngestBench } from './ingest.bench.js';
import { runReaderBench } from './reader.bench.js';
import { runReopeningBench } from './reopening.bench.js';
import { runWritePathBench } from './write-path.bench.js';

const quick = process.argv.includes('--quick');
const t = performance.now();
console.log(
  `tsbuckets benchmarks (${quick ? 'quick' : 'full'}), node ${process.version}, ${new Date().toISOString()}`,
);
await runIngestBench(quick);
await runWritePathBench(quick);
await runReopeningBench(quick);
await runReaderBench(quick);
await runBsonColumnBench(quick);
console.log(`\ntotal ${((performance.now() - t) / 1000).toFixed(1)} s`);
