/** The command tree run in process: errors of tsbuckets and of the system become one line and status 1. */
import { PassThrough } from 'node:stream';

import { describe, expect, it } from 'vitest';

import type { CommandIo } from '../../src/cli/io.js';
import { main } from '../../src/cli/program.js';

function capture(): { io: CommandIo; out: string[]; warn: string[] } {
  const out: string[] = [];
  const warn: string[] = [];
  return {
    io: {
      out: (t) => out.push(t),
      warn: (t) => warn.push(t),
      err: new PassThrough(),
      stdin: new PassThrough(),
    },
    out,
    warn,
  };
}

describe('main', () => {
  it('reports a missing source, a missing file and an empty sample as one line with status 1', async () => {
    const c = capture();
    expect(await main(['node', 'tsbuckets', 'stats'], c.io)).toBe(1);
    expect(await main(['node', 'tsbuckets', 'ingest', 'test/fixtures/cli/missing.csv'], c.io)).toBe(1);
    const stdin = new PassThrough();
    stdin.end('not json\n');
    expect(await main(['node', 'tsbuckets', 'advise', '-'], { ...c.io, stdin })).toBe(1);
    expect(c.warn).toEqual([
      'tsbuckets: give either a FILE to ingest or --uri',
      "tsbuckets: ENOENT: no such file or directory, stat 'test/fixtures/cli/missing.csv'",
      '1 lines skipped (not measurements)',
      'tsbuckets: the sample has no measurements',
    ]);
    expect(c.out).toEqual([]);
  });

  it('runs a command and prints its result', async () => {
    const c = capture();
    const stdin = new PassThrough();
    stdin.end('{"ts": 0, "v": 1}\n{"ts": 1000, "v": 2}\n');
    expect(await main(['node', 'tsbuckets', 'ingest', '-', '--span', '1s'], { ...c.io, stdin })).toBe(0);
    const lines = c.out.join('\n').split('\n');
    expect(lines[0]).toMatch(/^ingested: {4}2 measurements in /u);
    expect(lines.slice(1)).toEqual([
      'buckets:     2 (1 open), 1.0 measurements per bucket',
      expect.stringMatching(/^size: /u) as unknown,
      'closures:    time forward 1',
    ]);
  });
});
