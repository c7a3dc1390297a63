/**
 * The commands with `--uri`, against a real MongoDB when `MONGODB_URI` is set (database `MONGODB_DB`,
 * default `tsbuckets_test`; the collection is dropped after the test). Without `MONGODB_URI` these tests
 * are skipped, like the other tests that need a server.
 */
import { afterAll, describe, expect, it } from 'vitest';

import { maskTiming, runCli } from './support/run-cli.js';

const uri = process.env.MONGODB_URI;
const dbName = process.env.MONGODB_DB ?? 'tsbuckets_test';
const collection = `cli_${process.pid}`;

describe.skipIf(uri === undefined)('tsbuckets with --uri (MONGODB_URI)', () => {
  const server = ['--uri', uri ?? '', '--db', dbName];

  afterAll(async () => {
    const { MongoClient } = await import('mongodb');
    const client = await MongoClient.connect(uri ?? '');
    await client
      .db(dbName)
      .dropCollection(collection)
      .catch(() => false);
    await client.close();
  });

  it('ingests into a time-series collection, then inspects, counts and samples it', async () => {
    const ingest = await runCli([
      'ingest',
      'test/fixtures/cli/weather.csv',
      '--meta-field',
      'sensor',
      '--collection',
      collection,
      ...server,
    ]);
    expect(ingest.code).toBe(0);
    expect(maskTiming(ingest.stdout).split('\n')[0]).toBe('ingested:    7 measurements in <time>');

    const inspect = await runCli(['inspect', '--collection', collection, '--series', '"a"', ...server]);
    expect(inspect.code).toBe(0);
    expect(inspect.stdout).toMatch(/^bucket [0-9a-f]{24}: version \d, 4 measurements\nmeta: "a"\n/u);
    expect(inspect.stdout.trimEnd().split('\n').at(-1)).toBe('1 of 1 matching buckets shown (--limit 3)');

    const stats = await runCli(['stats', '--collection', collection, ...server]);
    expect(stats.code).toBe(0);
    expect(stats.stdout).toContain('│ measurements                        │     7 │');
    expect(stats.stdout).toContain('│ series                              │     2 │');

    const advise = await runCli(['advise', '--collection', collection, ...server]);
    expect(advise.code).toBe(0);
    expect(advise.stdout.split('\n')[0]).toBe(
      'sample:   7 measurements, 2 series, 2026-01-01T00:00:00.000Z to 2026-01-01T00:00:30.000Z',
    );
  });
});
