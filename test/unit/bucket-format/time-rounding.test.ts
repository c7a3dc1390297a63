import { describe, expect, it } from 'vitest';

import { roundTimestampBySeconds, timeWindowPosition } from '../../../src/bucket-format/time-rounding.js';

const iso = (s: string) => new Date(s).getTime();

describe('roundTimestampBySeconds', () => {
  it('floors to the rounding unit of each granularity preset', () => {
    const t = iso('2024-10-04T10:14:33.250Z');
    expect(new Date(roundTimestampBySeconds(t, 60)).toISOString()).toBe('2024-10-04T10:14:00.000Z');
    expect(new Date(roundTimestampBySeconds(t, 3600)).toISOString()).toBe('2024-10-04T10:00:00.000Z');
    expect(new Date(roundTimestampBySeconds(t, 86400)).toISOString()).toBe('2024-10-04T00:00:00.000Z');
  });

  it('keeps an aligned time unchanged', () => {
    expect(roundTimestampBySeconds(iso('2024-10-04T10:14:00Z'), 60)).toBe(iso('2024-10-04T10:14:00Z'));
    expect(roundTimestampBySeconds(0, 60)).toBe(0);
  });

  it('floors pre-1970 times toward minus infinity (newest server), not toward the epoch', () => {
    expect(roundTimestampBySeconds(-1, 60)).toBe(-60_000);
    expect(roundTimestampBySeconds(-30_500, 60)).toBe(-60_000);
    expect(roundTimestampBySeconds(-61_000, 60)).toBe(-120_000);
    expect(roundTimestampBySeconds(-60_000, 60)).toBe(-60_000);
  });

  it('uses custom rounding seconds', () => {
    expect(roundTimestampBySeconds(iso('2024-10-04T10:14:33Z'), 7)).toBe(
      Math.floor(iso('2024-10-04T10:14:33Z') / 7000) * 7000,
    );
  });
});

describe('timeWindowPosition', () => {
  // jstest vector (docs/mongodb-behaviour.md §2.4): seconds granularity, first insert 20:10:14.134 → bucket 20:10:00.
  const start = roundTimestampBySeconds(iso('2021-01-01T20:10:14.134Z'), 60);
  it('accepts m <= t < m + span', () => {
    expect(timeWindowPosition(iso('2021-01-01T20:10:05Z'), start, 3600)).toBe('inside');
    expect(timeWindowPosition(iso('2021-01-01T21:09:59.999Z'), start, 3600)).toBe('inside');
    expect(timeWindowPosition(start, start, 3600)).toBe('inside');
  });
  it('rejects t >= m + span as time forward and t < m as time backward', () => {
    expect(timeWindowPosition(iso('2021-01-01T21:10:00.000Z'), start, 3600)).toBe('after');
    expect(timeWindowPosition(start - 1, start, 3600)).toBe('before');
  });
});
