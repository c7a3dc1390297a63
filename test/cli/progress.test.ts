import { Writable } from 'node:stream';

import { describe, expect, it } from 'vitest';

import { startProgress } from '../../src/cli/progress.js';

class Capture extends Writable {
  text = '';
  constructor(readonly isTTY: boolean) {
    super();
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

describe('progress', () => {
  it('draws a bar with the count, rate and ETA on a terminal', () => {
    const stream = new Capture(true);
    const progress = startProgress({ total: 1000, unit: 'bytes', stream });
    progress.update(500, { measurements: 12_345 });
    progress.stop();
    expect(stream.text).toContain('12,345 measurements');
    expect(stream.text).toMatch(/50% \| 12,345 measurements \| [\d,]+ measurements\/s \| ETA /u);
  });

  it('draws no bar without a total, and nothing at all when not on a terminal', () => {
    const unknown = new Capture(true);
    const progress = startProgress({ total: undefined, unit: 'bytes', stream: unknown });
    progress.update(10, { measurements: 7 });
    progress.stop();
    expect(unknown.text).toContain('7 measurements |');
    expect(unknown.text).not.toContain('ETA');

    const piped = new Capture(false);
    const silent = startProgress({ total: 10, unit: 'measurements', stream: piped });
    silent.update(5);
    silent.stop();
    expect(piped.text).toBe('');
  });
});
