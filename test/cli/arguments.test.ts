import { InvalidArgumentError } from 'commander';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import {
  formatDuration,
  parseDuration,
  parseFormat,
  parseGranularity,
  parseMode,
  parseOpenBucketForm,
  parseBatchSize,
  parsePositiveInteger,
  parseQueryWidth,
  parseWriters,
  parseSpan,
} from '../../src/cli/arguments.js';

describe('option parsers', () => {
  it('parsePositiveInteger takes positive safe integers only', () => {
    expect(parsePositiveInteger('1000')).toBe(1000);
    expect(parsePositiveInteger('1e6')).toBe(1_000_000);
    for (const bad of ['abc', '', ' ', '0', '-5', '1.5', '1_000', '9007199254740993', 'Infinity']) {
      expect(() => parsePositiveInteger(bad), bad).toThrow(InvalidArgumentError);
    }
    expect(() => parsePositiveInteger('abc')).toThrow('Expected a positive integer.');
  });

  it('bounds what the command allocates up front: writers, batch size, query width', () => {
    expect(parseWriters('1024')).toBe(1024);
    expect(() => parseWriters('1025')).toThrow('Expected at most 1,024 (concurrent writers).');
    expect(() => parseWriters('0')).toThrow('Expected a positive integer.');
    expect(parseBatchSize('100000')).toBe(100_000);
    expect(() => parseBatchSize('100001')).toThrow("Expected at most 100,000 (MongoDB's maxWriteBatchSize).");
    expect(parseQueryWidth('36500d')).toBe(36_500 * 86_400);
    expect(() => parseQueryWidth('36501d')).toThrow('Expected a width of at most 36500d.');
    expect(() => parseQueryWidth('1w')).toThrow(InvalidArgumentError);
  });

  it('parseDuration reads seconds with an optional unit', () => {
    expect(parseDuration('90')).toBe(90);
    expect(parseDuration('90s')).toBe(90);
    expect(parseDuration('15m')).toBe(900);
    expect(parseDuration('1.5h')).toBe(5400);
    expect(parseDuration('30d')).toBe(2_592_000);
    for (const bad of ['0', '1w', 'h', '-1m', '0.5', '1.5s', '']) {
      expect(() => parseDuration(bad), bad).toThrow(InvalidArgumentError);
    }
  });

  it('parseSpan stops at 365 days', () => {
    expect(parseSpan('365d')).toBe(31_536_000);
    expect(() => parseSpan('366d')).toThrow('Expected a span of at most 31536000 seconds (365 days).');
  });

  it('formatDuration uses the largest unit that divides, and parseDuration reads it back', () => {
    expect([1, 60, 90, 3600, 5400, 86400, 2_592_000].map(formatDuration)).toEqual([
      '1s',
      '1m',
      '90s',
      '1h',
      '90m',
      '1d',
      '30d',
    ]);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 31_536_000 }), (seconds) => {
        expect(parseDuration(formatDuration(seconds))).toBe(seconds);
      }),
    );
  });

  it('closed sets accept their members only', () => {
    expect(parseGranularity('hours')).toBe('hours');
    expect(() => parseGranularity('weeks')).toThrow("Expected 'seconds', 'minutes' or 'hours'.");
    expect(parseMode('buckets')).toBe('buckets');
    expect(() => parseMode('view')).toThrow(InvalidArgumentError);
    expect(parseOpenBucketForm('uncompressed')).toBe('uncompressed');
    expect(() => parseOpenBucketForm('v1')).toThrow(InvalidArgumentError);
    expect(parseFormat('csv')).toBe('csv');
    expect(() => parseFormat('tsv')).toThrow(InvalidArgumentError);
  });
});
