import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import type { InsertItem, StageResult, WriteBatch } from '../../../src/catalog/bucket-catalog.js';
import { makeBucketMetadata } from '../../../src/catalog/bucket-metadata.js';
import { TimeseriesError } from '../../../src/errors.js';
import { firstInterleaved, orderedRoundEnd } from '../../../src/engine/ordered-rounds.js';

const item = (series: string): InsertItem => ({
  measurement: {},
  timeMs: 0,
  metadata: makeBucketMetadata(series),
});

/** Every round of `series`, as series strings. */
function rounds(series: ReadonlyArray<string>): string[] {
  const items = series.map(item);
  const indices = items.map((_, i) => i);
  const out: string[] = [];
  for (let from = 0; from < indices.length;) {
    const end = orderedRoundEnd(items, indices, from);
    out.push(series.slice(from, end).join(''));
    from = end;
  }
  return out;
}

describe('orderedRoundEnd', () => {
  it('starts a round where a series comes back after another series', () => {
    expect(rounds(['a', 'b', 'a', 'b'])).toEqual(['ab', 'ab']);
    expect(rounds(['a', 'a', 'b', 'b', 'c'])).toEqual(['aabbc']);
    expect(rounds(['a', 'b', 'c', 'a', 'a', 'b'])).toEqual(['abc', 'aab']);
    expect(rounds(['a', 'b', 'b', 'a', 'c', 'a'])).toEqual(['abb', 'ac', 'a']);
    expect(rounds([])).toEqual([]);
  });

  it('cuts any call into the fewest rounds in which each series is contiguous', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 20 }), (series) => {
        const parts = rounds(series);
        expect(parts.join('')).toBe(series.join(''));
        for (const part of parts) {
          // Contiguous: a series never comes back within a round.
          const runs = part.replace(/(.)\1*/g, '$1');
          expect(new Set(runs).size).toBe(runs.length);
        }
        // Fewest: each round but the last ends because the next measurement's series came back.
        for (let r = 0; r + 1 < parts.length; r++) {
          const part = parts[r] as string;
          const next = (parts[r + 1] as string)[0] as string;
          expect(part.includes(next) && part.at(-1) !== next).toBe(true);
        }
      }),
    );
  });
});

describe('firstInterleaved', () => {
  const a = { id: 'a' } as unknown as WriteBatch;
  const b = { id: 'b' } as unknown as WriteBatch;
  const staged = (batch: WriteBatch): StageResult => ({ kind: 'staged', batch });
  const error: StageResult = { kind: 'error', error: new TimeseriesError('BadValue', 'bad') };

  it('finds the first measurement whose batch already took an earlier, non-adjacent measurement', () => {
    expect(firstInterleaved([staged(a), staged(a), staged(b), staged(b)])).toBe(-1);
    expect(firstInterleaved([staged(a), staged(b), staged(a)])).toBe(2);
    expect(firstInterleaved([staged(a), staged(b), staged(b), staged(a), staged(b)])).toBe(3);
    expect(firstInterleaved([staged(a), error, staged(a)])).toBe(-1);
    expect(firstInterleaved([])).toBe(-1);
  });
});
