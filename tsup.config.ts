import { defineConfig } from 'tsup';

// Two entry points: the core never loads the `mongodb` driver; `tsbuckets/mongodb` does.
export default defineConfig({
  entry: { index: 'src/index.ts', 'mongodb/index': 'src/mongodb/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: ['mongodb', 'bson', 'mingo', 'async-mutex', 'lru-cache'],
});
