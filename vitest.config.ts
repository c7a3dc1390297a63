import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/support/bson-equality.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Type-level tests (`test/types/*.test-d.ts`): vitest runs `tsc` on them, so a `@ts-expect-error` line
    // that starts compiling fails `npm test` (as it fails `npm run typecheck`).
    typecheck: {
      enabled: true,
      include: ['test/types/**/*.test-d.ts'],
      tsconfig: './tsconfig.test.json',
    },
  },
});
