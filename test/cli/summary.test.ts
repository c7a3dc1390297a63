import { describe, expect, it } from 'vitest';

import type { CollectionStats } from '../../src/engine/timeseries-collection.js';
import { formatBytes, formatClosures, formatIngestSummary, formatNumber } from '../../src/cli/summary.js';
import { formatCell, renderTable } from '../../src/cli/table.js';
import { Decimal128, Double, Int32, Long, ObjectId } from 'bson';

describe('summary', () => {
  it('prints throughput, buckets, bytes per measurement and closures with units', () => {
    const stats = {
      ns: 'tsbuckets.weather',
      timeseries: {
        bucketsNs: 'tsbuckets.system.buckets.weather',
        bucketCount: 3000,
        numBucketsClosedDueToCount: 0,
        numBucketsClosedDueToTimeForward: 2000,
        numBucketsClosedDueToSize: 12,
        numBucketsArchivedDueToTimeBackward: 1,
      },
    } as unknown as CollectionStats;
    expect(
      formatIngestSummary({
        inserted: 1_000_000,
        seconds: 4.2049,
        stats,
        openBuckets: 1000,
        sizes: {
          buckets: 3000,
          measurements: 1_000_000,
          compressedBytes: 3_456_789,
          uncompressedBytes: 34_500_000,
          storedBytes: 9,
        },
      }),
    ).toBe(
      [
        'ingested:    1,000,000 measurements in 4.20 s (237,818 measurements/s)',
        'buckets:     3,000 (1,000 open), 333.3 measurements per bucket',
        'size:        3.5 bytes per measurement compressed, 34.5 uncompressed',
        'closures:    size 12, time forward 2,000, archived (time backward) 1',
      ].join('\n'),
    );
    expect(formatClosures({})).toBe('none');
  });

  it('formats numbers, bytes and cells', () => {
    expect(formatNumber(1234.56, 1)).toBe('1,234.6');
    expect([0, 1023, 1024, 1536, 5 * 1024 * 1024].map(formatBytes)).toEqual([
      '0 B',
      '1023 B',
      '1.0 KiB',
      '1.5 KiB',
      '5.0 MiB',
    ]);
    expect(
      [
        undefined,
        'text',
        12345,
        0.5,
        new Date(0),
        ObjectId.createFromHexString('6955b900eacd7fb55083ec4f'),
        new Long(7),
        Long.MAX_VALUE,
        new Int32(3_000),
        new Double(2.5),
        Decimal128.fromString('1.10'),
        { a: [1] },
        { big: Long.MIN_VALUE, small: new Long(3) },
      ].map(formatCell),
    ).toEqual([
      '',
      'text',
      '12,345',
      '0.5',
      '1970-01-01T00:00:00.000Z',
      '6955b900eacd7fb55083ec4f',
      '7',
      // Every digit of an int64 beyond 2^53, in a cell or inside a value.
      '9,223,372,036,854,775,807',
      '3,000',
      '2.5',
      '{"$numberDecimal":"1.10"}',
      '{"a":[1]}',
      '{"big":{"$numberLong":"-9223372036854775808"},"small":3}',
    ]);
    expect(
      renderTable(
        ['name', 'n'],
        [
          ['a', '1'],
          ['bb', '22'],
        ],
      ),
    ).toBe(
      [
        '┌──────┬────┐',
        '│ name │  n │',
        '├──────┼────┤',
        '│ a    │  1 │',
        '│ bb   │ 22 │',
        '└──────┴────┘',
      ].join('\n'),
    );
  });
});
