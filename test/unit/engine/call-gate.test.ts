import { describe, expect, it } from 'vitest';

import { CallGate } from '../../../src/engine/call-gate.js';
import { Deferred } from '../../../src/util/deferred.js';

describe('CallGate', () => {
  it('close() refuses later calls at once and resolves only after the calls in flight', async () => {
    // Arrange
    const gate = new CallGate();
    const release = new Deferred<void>();
    const events: string[] = [];
    const inFlight = gate.run(async () => {
      await release.promise;
      events.push('call done');
      return 7;
    });
    // Act
    const closed = gate.close(() => new Error('closed')).then(() => events.push('closed'));
    // Assert
    expect(gate.state).toBe('closing');
    await expect(gate.run(() => Promise.resolve(1))).rejects.toThrow('closed');
    expect(() => {
      gate.assertOpen();
    }).toThrow('closed');
    release.resolve();
    expect(await inFlight).toBe(7);
    await closed;
    expect(events).toEqual(['call done', 'closed']);
    expect(gate.state).toBe('closed');
  });

  it('a second close returns the first one and keeps its refusal; a failed call still counts as done', async () => {
    // Arrange
    const gate = new CallGate();
    const failing = gate.run(() => Promise.reject(new Error('boom')));
    // Act
    const first = gate.close(() => new Error('first'));
    const second = gate.close(() => new Error('second'));
    // Assert
    expect(second).toBe(first);
    await expect(failing).rejects.toThrow('boom');
    await first;
    await expect(gate.run(() => Promise.resolve(1))).rejects.toThrow('first');
  });
});
