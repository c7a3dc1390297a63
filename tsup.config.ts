import { defineConfig } from 'tsup';

const external = ['mongodb', 'bson', 'mingo', 'async-mutex', 'lru-cache'];

export default defineConfig([
  // The library: two entry points; the core never loads the `mongodb` driver, `tsbuckets/mongodb` does.
  {
    entry: { index: 'src/index.ts', 'mongodb/index': 'src/mongodb/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    // Everything but the command's folder, which the second build writes at the same time.
    clean: ['**/*', '!cli/**'],
    target: 'node20',
    external,
  },
  // The `tsbuckets` command (package `bin`): ESM only, no types; the driver is in a chunk of its own,
  // loaded only for `--uri`.
  {
    entry: { main: 'src/cli/main.ts' },
    outDir: 'dist/cli',
    format: ['esm'],
    target: 'node20',
    external: [...external, 'commander', 'cli-progress', 'cli-table3', 'csv-parse'],
  },
]);
