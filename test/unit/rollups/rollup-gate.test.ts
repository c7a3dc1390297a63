import { describe, expect, it } from 'vitest';

import { RollupGate } from '../../../src/rollups/rollup-gate.js';
import { Deferred } from '../../../src/util/deferred.js';

describe('RollupGate', () => {
  it('enters synchronously while open; an exclusive holder waits for shared holders and blocks new ones', async () => {
    const gate = new RollupGate();
    const events: string[] = [];
    // Arrange: one commit inside the gate.
    const first = gate.enter();
    expect(first).not.toBeInstanceOf(Promise);
    // Act: a recomputation asks for the gate, then a second commit arrives.
    const done = new Deferred<void>();
    const exclusive = gate.exclusive(async () => {
      events.push('exclusive');
      await done.promise;
      events.push('exclusive done');
    });
    const second = gate.enter();
    expect(second).toBeInstanceOf(Promise);
    void Promise.resolve(second).then(() => events.push('second entered'));
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(events).toEqual([]);
    gate.leave(first as Exclude<typeof first, Promise<unknown>>);
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(events).toEqual(['exclusive']);
    done.resolve();
    await exclusive;
    gate.leave(await second);
    // Assert: the second commit entered only after the exclusive work.
    expect(events).toEqual(['exclusive', 'exclusive done', 'second entered']);
  });
});
