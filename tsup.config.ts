import { defineConfig } from 'tsup';

const external = ['mongodb', 'bson', 'mingo', 'async-mutex', 'lru-cache'];

// No source maps: they would ship the whole source inside the package without serving users (the
// published JavaScript is readable, unminified TypeScript output).
export default defineConfig([
  // The library. Two entry points: the core never loads the `mongodb` driver; `tsbuckets/mongodb` does, at
  // run time (src/mongodb/driver.ts), so a missing optional peer gives a clear error. `shims` gives the
  // CommonJS build an `import.meta.url` for the driver loader's `createRequire`.
  {
    entry: { index: 'src/index.ts', 'mongodb/index': 'src/mongodb/index.ts' },
    format: ['esm', 'cjs'],
    // Shared modules go to shared chunks in both formats, so that `tsbuckets` and `tsbuckets/mongodb`
    // load one copy of each (one `TsBucketsError`: a MongoStorageError is an instance of the exported base).
    splitting: true,
    dts: true,
    sourcemap: false,
    shims: true,
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
    sourcemap: false,
    target: 'node20',
    external: [...external, 'commander', 'cli-progress', 'cli-table3', 'csv-parse'],
  },
]);
