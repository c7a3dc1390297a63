/**
 * The scripts in examples/ run as written and print what their comments say.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

async function run(script: string): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { cwd: root });
  return stdout;
}

describe('examples', () => {
  it('embedded-catalog.ts: two writers, two sensors, one compressed bucket each', async () => {
    const out = await run('examples/embedded-catalog.ts');
    expect(out.match(/version: 2/g)).toHaveLength(2);
    expect(out.match(/count: 2/g)).toHaveLength(2);
    expect(out).toContain("meta: 'north'");
    expect(out).toContain("meta: 'south'");
    expect(out).toMatch(/numBuckets: 2,\s+numCommits: 2,\s+numWaits: 0,\s+numMeasurementsCommitted: 4/);
  });

  it('quick-start.ts: the measurement over 21.6 comes back', async () => {
    const out = await run('examples/quick-start.ts');
    expect(out).toContain('temp: 21.7');
    expect(out).toContain('numBucketInserts: 1');
  });
});
