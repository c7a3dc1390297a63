/**
 * An unreachable server: the first call fails with HostUnreachable naming the driver's cause, and the
 * process stays alive until it does (the retry back-off's timer used to be the only thing left in the
 * event loop, unref'd, so the process exited with the call unsettled).
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const script = resolve(import.meta.dirname, 'support', 'unreachable-client.ts');

describe('MongoStorage with an unreachable server', () => {
  it('rejects the first call with HostUnreachable and the driver message before the process exits', async () => {
    // Act
    const { stdout } = await run(process.execPath, ['--import', 'tsx', script], { timeout: 30_000 });
    // Assert
    const outcome = JSON.parse(stdout.trim()) as { outcome: string; codeName: string; message: string };
    expect(outcome.outcome).toBe('rejected');
    expect(outcome.codeName).toBe('HostUnreachable');
    expect(outcome.message).toContain('ECONNREFUSED');
  });
});
