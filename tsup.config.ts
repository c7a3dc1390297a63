import { defineConfig } from 'tsup';

// Two entry points: the core never loads the `mongodb` driver; `tsbuckets/mongodb` does, at run time
// (src/mongodb/driver.ts), so a missing optional peer gives a clear error.
// No source maps: they would ship the whole source inside the package without serving users (the
// published JavaScript is readable, unminified TypeScript output). `shims` gives the CommonJS build an
// `import.meta.url` for the driver loader's `createRequire`.
export default defineConfig({
  entry: { index: 'src/index.ts', 'mongodb/index': 'src/mongodb/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: false,
  shims: true,
  clean: true,
  target: 'node20',
  external: ['mongodb', 'bson', 'mingo', 'async-mutex', 'lru-cache'],
});
