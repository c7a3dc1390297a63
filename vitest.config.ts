import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/support/bson-equality.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
