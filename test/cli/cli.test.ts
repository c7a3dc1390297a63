/**
 * The `tsbuckets` command run as a process on the fixtures of `test/fixtures/cli/`: usage errors, the
 * summaries, rejected lines, the advisor's exact report, inspect and stats on an ingested file.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { kRoot, maskTiming, runCli } from './support/run-cli.js';
import { writeCsvSample } from './support/samples.js';

const kCsv = 'test/fixtures/cli/weather.csv';
const kNdjson = 'test/fixtures/cli/weather.ndjson';

describe('tsbuckets (process)', () => {
  it('--help lists the commands', async () => {
    const { code, stdout } = await runCli(['--help']);
    expect(code).toBe(0);
    const commands = [...stdout.matchAll(/^ {2}(\w+) /gmu)].map((m) => m[1]);
    expect(commands).toEqual(['demo', 'ingest', 'advise', 'inspect', 'stats', 'help']);
  });

  it('--version prints the package version', async () => {
    const { readFile } = await import('node:fs/promises');
    const manifest = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const { code, stdout } = await runCli(['--version']);
    expect(code).toBe(0);
    expect(stdout).toBe(`${manifest.version}\n`);
  });

  it('refuses an invalid value and an unknown option', async () => {
    const invalid = await runCli(['demo', '--measurements', 'abc']);
    expect(invalid.code).toBe(1);
    expect(invalid.stdout).toBe('');
    expect(invalid.stderr).toBe(
      "error: option '--measurements <n>' argument 'abc' is invalid. Expected a positive integer.\n(run with --help for usage)\n",
    );
    const unknown = await runCli(['ingest', kCsv, '--tim-field', 'ts']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("error: unknown option '--tim-field'");
  });

  it('demo prints the short summary with units', async () => {
    const { code, stdout, stderr } = await runCli([
      'demo',
      '--measurements',
      '3000',
      '--sensors',
      '10',
      '--writers',
      '1',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    // 10 sensors every 10 s: 300 measurements each over 50 minutes, one bucket per sensor (span 1 h).
    expect(maskTiming(stdout)).toBe(
      [
        'tsbuckets demo: 3,000 measurements, 10 sensors, 1 writer (embedded storage)',
        'ingested:    3,000 measurements in <time>',
        'buckets:     10 (10 open), 300.0 measurements per bucket',
        'size:        2.8 bytes per measurement compressed, 34.5 uncompressed',
        'closures:    none',
        '',
      ].join('\n'),
    );
  });

  it('ingest reports bad lines with their numbers and stores the rest', async () => {
    const { code, stdout, stderr } = await runCli(['ingest', kCsv, '--meta-field', 'sensor', '--stats']);
    expect(code).toBe(0);
    expect(stderr).toBe(
      [`${kCsv}:6: 6 cells for 5 columns`, `${kCsv}:8: 'ts' is not a valid time: "yesterday"`, ''].join('\n'),
    );
    const lines = maskTiming(stdout).split('\n');
    expect(lines.slice(0, 2)).toEqual([
      'ingested:    7 measurements in <time>',
      'buckets:     2 (2 open), 3.5 measurements per bucket',
    ]);
    expect(lines[3]).toBe('closures:    none');
    expect(lines[4]).toBe('rejected:    2 lines');
    expect(stdout).toContain(
      '│ numMeasurementsCommitted                 │                                     7 │',
    );
  });

  it('ingest --strict stops at the first bad line; - reads standard input', async () => {
    const strict = await runCli(['ingest', kNdjson, '--strict']);
    expect(strict.code).toBe(1);
    expect(strict.stderr).toBe(
      `${kNdjson}:4: not JSON: Unexpected token 'o', "not json" is not valid JSON\n` +
        'tsbuckets: stopped at the first rejected line (--strict); 3 measurements were stored before it\n',
    );
    const piped = await runCli(
      ['ingest', '-', '--format', 'csv', '--span', '1m'],
      'ts,v\n2026-01-01T00:00:00Z,1\n2026-01-01T00:00:30Z,2\n2026-01-01T00:01:00Z,3\n',
    );
    expect(piped.stderr).toBe('');
    expect(maskTiming(piped.stdout).split('\n').slice(0, 4)).toEqual([
      'ingested:    3 measurements in <time>',
      'buckets:     2 (1 open), 1.5 measurements per bucket',
      expect.stringMatching(/^size: /u),
      'closures:    time forward 1',
    ]);
    // A CSV read as NDJSON: every line rejected is a failure, after the summary.
    const wrong = await runCli(['ingest', '-'], 'ts,v\n2026-01-01T00:00:00Z,1\n');
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain('rejected:    2 lines');
    expect(wrong.stderr).toMatch(/tsbuckets: every line of standard input was rejected\n$/u);
  });

  it('advise prints the table and the recommendation for a fixed sample', async () => {
    const { code, stdout, stderr } = await runCli([
      'advise',
      'test/fixtures/cli/advisor-1m.csv',
      '--meta-field',
      'sensor',
    ]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toBe(
      `sample:   1,440 measurements, 3 series, 2026-01-01T00:00:00.000Z to 2026-01-01T07:59:00.000Z
cadence:  one measurement every 1m per series (median); 40.3 bytes per measurement as BSON (mean, without the meta)
queries:  20 time-range queries of 1h over all series
┌────────────┬──────┬─────────┬─────────────────────┬───────────────────┬─────────────────┬──────────────────────────┬───────────────┬───────────────────┐
│ candidate  │ span │ buckets │ measurements/bucket │ bytes/measurement │        closures │       open-bucket memory │ buckets/query │ unpacked/returned │
├────────────┼──────┼─────────┼─────────────────────┼───────────────────┼─────────────────┼──────────────────────────┼───────────────┼───────────────────┤
│ seconds    │   1h │      24 │                60.0 │               7.5 │ time forward 21 │ 9.6 KiB (3.2 KiB/series) │           5.9 │               2.0 │
│ minutes    │   1d │       3 │               480.0 │               3.6 │            none │ 9.9 KiB (3.3 KiB/series) │           3.0 │               8.0 │
│ hours      │  30d │       3 │               480.0 │               3.6 │            none │ 9.9 KiB (3.3 KiB/series) │           3.0 │               8.0 │
│ custom 2h  │   2h │      12 │               120.0 │               5.3 │  time forward 9 │ 9.8 KiB (3.3 KiB/series) │           4.2 │               2.8 │
│ custom 12h │  12h │       3 │               480.0 │               3.6 │            none │ 9.9 KiB (3.3 KiB/series) │           3.0 │               8.0 │
└────────────┴──────┴─────────┴─────────────────────┴───────────────────┴─────────────────┴──────────────────────────┴───────────────┴───────────────────┘
bytes/measurement: compressed BSON bytes of the buckets per measurement; open-bucket memory: the catalog's
estimate at its peak during the replay; buckets/query and unpacked/returned: per time-range query.
note: the sample covers less time than the span of minutes, hours, custom 12h: their buckets may not have filled; a longer sample tells more.
recommendation: granularity 'minutes'. With one measurement every 1m per series, its buckets hold 480 measurements (none closed within the sample) at 3.6 bytes per measurement, the best compression of the candidates; a 1h query unpacks 8.0 measurements per measurement returned, the fewest of the 3 candidates within 15% of the best compression.
`,
    );
  });

  it('inspect prints a series’ bucket as tables; stats the stored buckets and the counters', async () => {
    const inspect = await runCli([
      'inspect',
      kNdjson,
      '--meta-field',
      'sensor',
      '--series',
      '{"site": "north", "id": 1}',
    ]);
    expect(inspect.code).toBe(0);
    expect(inspect.stderr).toBe(
      `${kNdjson}:4: not JSON: Unexpected token 'o', "not json" is not valid JSON\n${kNdjson}:5: no 'ts' field\n`,
    );
    expect(inspect.stdout.replace(/^bucket [0-9a-f]{24}:/u, 'bucket <id>:')).toBe(
      `bucket <id>: version 2, 3 measurements
meta: {"id":1,"site":"north"}
┌───────┬──────────────────────────┬──────────────────────────┐
│ field │ control.min              │ control.max              │
├───────┼──────────────────────────┼──────────────────────────┤
│ ts    │ 2026-01-01T00:00:00.000Z │ 2026-01-01T00:03:00.000Z │
│ temp  │ 21.5                     │ 22                       │
└───────┴──────────────────────────┴──────────────────────────┘
┌───┬──────────────────────────┬──────┐
│ # │ ts                       │ temp │
├───┼──────────────────────────┼──────┤
│ 0 │ 2026-01-01T00:00:00.000Z │ 21.5 │
│ 1 │ 2026-01-01T00:01:00.000Z │ 21.6 │
│ 2 │ 2026-01-01T00:03:00.000Z │ 22   │
└───┴──────────────────────────┴──────┘
1 of 1 matching buckets shown (--limit 3)
`,
    );
    const stats = await runCli(['stats', kCsv, '--meta-field', 'sensor', '--span', '10s']);
    expect(stats.code).toBe(0);
    const lines = stats.stdout.split('\n');
    expect(lines.slice(0, 14)).toEqual([
      '┌─────────────────────────────────────┬───────┐',
      '│ stored buckets                      │ value │',
      '├─────────────────────────────────────┼───────┤',
      '│ buckets                             │     7 │',
      '│   version 1 (uncompressed)          │     0 │',
      '│   version 2 (compressed)            │     7 │',
      '│   version 3 (compressed, unsorted)  │     0 │',
      '│ series                              │     2 │',
      '│ measurements                        │     7 │',
      '│ measurements per bucket             │   1.0 │',
      expect.stringMatching(/^│ bytes per measurement, as stored {4}│ +\d+\.\d │$/u),
      expect.stringMatching(/^│ bytes per measurement, compressed {3}│ +\d+\.\d │$/u),
      expect.stringMatching(/^│ bytes per measurement, uncompressed │ +\d+\.\d │$/u),
      '└─────────────────────────────────────┴───────┘',
    ]);
    expect(lines[14]).toBe('collStats.timeseries (tsbuckets.measurements)');
    expect(stats.stdout).toContain(
      '│ numBucketsClosedDueToTimeForward         │                                     5 │',
    );
    expect(stats.stdout).toContain('serverStatus.bucketCatalog');
  });

  it('ends quietly when its reader stops early (inspect | head)', async () => {
    // Arrange: a sample whose inspection prints thousands of lines.
    const file = join(mkdtempSync(join(tmpdir(), 'tsbuckets-epipe-')), 'sample.csv');
    writeCsvSample(file, { series: 50, perSeries: 200, intervalMs: 10_000, start: Date.UTC(2026, 0, 1) });
    const args = ['inspect', file, '--meta-field', 'sensor', '--limit', '50', '--rows', '1000'];
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: kRoot });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // Act: read the first line, then close the pipe.
    const first = await new Promise<string>((resolve) => {
      child.stdout.once('data', (chunk: Buffer) => {
        child.stdout.destroy();
        resolve(chunk.toString().split('\n')[0] ?? '');
      });
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    // Assert
    expect(first).toMatch(/^bucket [0-9a-f]{24}: version 2, 200 measurements$/u);
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});
