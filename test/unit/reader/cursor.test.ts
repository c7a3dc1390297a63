import { describe, expect, it } from 'vitest';

import { TimeseriesError } from '../../../src/errors.js';
import { Cursor } from '../../../src/reader/cursor.js';

/** A batch source that records how far it was read and whether it was closed. */
function recordingBatches(batches: ReadonlyArray<ReadonlyArray<number>>) {
  const log = { pulled: 0, closed: false };
  async function* source(): AsyncGenerator<ReadonlyArray<number>> {
    try {
      for (const batch of batches) {
        log.pulled++;
        await Promise.resolve();
        yield batch;
      }
    } finally {
      log.closed = true;
    }
  }
  return { log, source };
}

describe('Cursor', () => {
  it('hands out the documents of its batches in order, skipping empty batches', async () => {
    // Arrange
    const { source } = recordingBatches([[1, 2], [], [3], [], [4, 5, 6]]);
    const seen: number[] = [];
    // Act
    for await (const n of new Cursor(source, 'batches')) seen.push(n);
    // Assert
    expect(seen).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('toArray takes every batch, also after some documents were iterated', async () => {
    const { source } = recordingBatches([[1, 2, 3], [4], [5, 6]]);
    expect(await new Cursor(source, 'batches').toArray()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('a document source works the same way', async () => {
    async function* docs(): AsyncGenerator<string> {
      await Promise.resolve();
      yield 'a';
      yield 'b';
    }
    expect(await new Cursor(docs).toArray()).toEqual(['a', 'b']);
    const seen: string[] = [];
    for await (const d of new Cursor(docs)) seen.push(d);
    expect(seen).toEqual(['a', 'b']);
  });

  it('breaking out of iteration closes the source and reads no further batch', async () => {
    // Arrange
    const { log, source } = recordingBatches([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    const seen: number[] = [];
    // Act
    for await (const n of new Cursor(source, 'batches')) {
      seen.push(n);
      if (n === 3) break;
    }
    // Assert
    expect(seen).toEqual([1, 2, 3]);
    expect(log).toEqual({ pulled: 2, closed: true });
  });

  it('is single-use: a second iteration is CursorClosed', async () => {
    const { source } = recordingBatches([[1]]);
    const cursor = new Cursor(source, 'batches');
    expect(await cursor.toArray()).toEqual([1]);
    const error: unknown = await cursor.toArray().catch((e: unknown) => e);
    expect(TimeseriesError.isTimeseriesError(error)).toBe(true);
    expect((error as TimeseriesError).codeName).toBe('CursorClosed');
    expect(() => cursor[Symbol.asyncIterator]()).toThrow(/already iterated/);
  });

  it('an error of the source reaches the consumer after the documents before it', async () => {
    async function* failing(): AsyncGenerator<ReadonlyArray<number>> {
      await Promise.resolve();
      yield [1, 2];
      throw new Error('storage failed');
    }
    const seen: number[] = [];
    const error: unknown = await (async () => {
      for await (const n of new Cursor(failing, 'batches')) seen.push(n);
    })().catch((e: unknown) => e);
    expect(seen).toEqual([1, 2]);
    expect((error as Error).message).toBe('storage failed');
    await expect(new Cursor(failing, 'batches').toArray()).rejects.toThrow('storage failed');
  });

  it('a guard runs once per batch, and its refusal closes the source and rejects the iteration', async () => {
    // Arrange: the guard refuses from the third pull on.
    const { log, source } = recordingBatches([[1, 2], [3], [4, 5], [6]]);
    let pulls = 0;
    const refusal = new TimeseriesError('QueryPlanKilled', 'collection dropped: db.c');
    const guard = <R>(pull: () => Promise<R>): Promise<R> => (++pulls > 2 ? Promise.reject(refusal) : pull());
    const seen: number[] = [];
    // Act
    const error: unknown = await (async () => {
      for await (const n of new Cursor(source, 'batches', guard)) seen.push(n);
    })().catch((e: unknown) => e);
    // Assert
    expect(seen).toEqual([1, 2, 3]);
    expect(error).toBe(refusal);
    expect(pulls).toBe(3);
    expect(log).toEqual({ pulled: 2, closed: true });
    await expect(new Cursor(source, 'batches', guard).toArray()).rejects.toBe(refusal);
  });
});
