import { describe, expect, it } from 'vitest';

import { adviseOnSample, sampleFromDb } from '../../src/cli/advise.js';
import { FakeDb } from '../integration/support/fake-mongo.js';

import {
  candidateLabel,
  candidatesFor,
  kRoundSpans,
  nearestRoundSpan,
} from '../../src/cli/advisor/candidates.js';
import { formatCadence, recommend } from '../../src/cli/advisor/recommendation.js';
import type { CandidateResult } from '../../src/cli/advisor/replay.js';
import { queryStarts, replayCandidate } from '../../src/cli/advisor/replay.js';
import { median, profileSample } from '../../src/cli/advisor/sample-profile.js';
import type { SampleProfile } from '../../src/cli/advisor/sample-profile.js';

const T0 = Date.UTC(2026, 0, 1);

describe('sample profile', () => {
  it('measures series, cadence, size and disorder, telling series apart as the catalog does', () => {
    const docs = [
      { ts: new Date(T0), m: { b: 1, a: 2 }, v: 1 },
      { ts: new Date(T0), m: { a: 2, b: 1 }, v: 1 }, // same series (field order), same time
      { ts: new Date(T0 + 10_000), m: { a: 2, b: 1 }, v: 1 },
      { ts: new Date(T0 + 5_000), m: { b: 1, a: 2 }, v: 1 }, // late
      { ts: new Date(T0), m: 1, v: 1 },
      { ts: new Date(T0 + 60_000), m: 1, v: 1 },
      { ts: new Date(T0 + 180_000), m: 1, v: 1 },
      { ts: new Date(T0 + 1_000), m: 1.5, v: 1 }, // one measurement: no interval
    ];
    const profile = profileSample(docs, 'ts', 'm');
    expect(profile).toEqual({
      measurements: 8,
      series: 3,
      firstTime: T0,
      lastTime: T0 + 180_000,
      // series {a,b}: intervals 5 s, 5 s -> 5 s; series 1: 60 s, 120 s -> 60 s (lower middle)
      cadenceMs: 5_000,
      // {ts: date, v: int32}: 4 + (1+3+8) + (1+2+4) + 1
      meanMeasurementBytes: 24,
      outOfOrder: 1,
    });
    expect(median([])).toBeUndefined();
    expect(median([3, 1, 2, 4])).toBe(2);
  });

  it('has no cadence when no series reports twice at different times', () => {
    const profile = profileSample(
      [
        { ts: new Date(T0), v: 1 },
        { ts: new Date(T0), v: 2 },
      ],
      'ts',
      undefined,
    );
    expect(profile.series).toBe(1);
    expect(profile.cadenceMs).toBeUndefined();
  });
});

describe('candidates', () => {
  it('are the three granularities and the round spans that fill a bucket, and a tenth of it', () => {
    expect(candidatesFor(1_000, 1000).map(candidateLabel)).toEqual([
      'seconds',
      'minutes',
      'hours',
      'custom 2m',
      'custom 15m',
    ]);
    expect(
      candidatesFor(60_000, 1000).map((c) => [candidateLabel(c), c.spanSeconds, c.roundingSeconds]),
    ).toEqual([
      ['seconds', 3600, 60],
      ['minutes', 86400, 3600],
      ['hours', 2592000, 86400],
      ['custom 2h', 7200, 7200],
      ['custom 12h', 43200, 43200],
    ]);
    // 1 h cadence: a bucket fills in ~42 days (nearest: 30 days, the span of `hours`, not repeated).
    expect(candidatesFor(3_600_000, 1000).map(candidateLabel)).toEqual([
      'seconds',
      'minutes',
      'hours',
      'custom 7d',
    ]);
    expect(candidatesFor(undefined, 1000).map(candidateLabel)).toEqual(['seconds', 'minutes', 'hours']);
    expect(candidatesFor(10, 1000).map(candidateLabel)).toEqual([
      'seconds',
      'minutes',
      'hours',
      'custom 1s',
      'custom 10s',
    ]);
  });

  it('round to the nearest round span on a log scale, within the allowed range', () => {
    expect(nearestRoundSpan(0.001)).toBe(1);
    expect(nearestRoundSpan(1e12)).toBe(31_536_000);
    expect(nearestRoundSpan(1000)).toBe(900);
    expect(nearestRoundSpan(60_000)).toBe(43_200);
    for (const span of kRoundSpans) expect(nearestRoundSpan(span)).toBe(span);
  });
});

describe('replay', () => {
  const profile = (first: number, last: number): SampleProfile => ({
    measurements: 0,
    series: 1,
    firstTime: first,
    lastTime: last,
    cadenceMs: undefined,
    meanMeasurementBytes: 0,
    outOfOrder: 0,
  });

  it('spreads the query windows over the sample', () => {
    expect(queryStarts(profile(0, 500), 1000)).toEqual([0]);
    const starts = queryStarts(profile(0, 20_000), 1000);
    expect(starts).toHaveLength(20);
    expect(starts[0]).toBe(0);
    expect(starts[19]).toBe(19_000);
  });

  it('replays through the engine: buckets, closures, and what queries read', async () => {
    // One series, one measurement a minute for 3 hours, with granularity seconds (span 1 h).
    const docs = Array.from({ length: 180 }, (_, i) => ({ ts: new Date(T0 + i * 60_000), s: 'a', v: i }));
    const p = profileSample(docs, 'ts', 's');
    const result = await replayCandidate(
      { docs, profile: p, timeField: 'ts', metaField: 's', queryWidthSeconds: 3600 },
      candidatesFor(p.cadenceMs, 1000)[0]!,
    );
    expect(result).toMatchObject({
      buckets: 3,
      measurements: 180,
      counters: expect.objectContaining({
        numBucketsClosedDueToTimeForward: 2,
        numMeasurementsCommitted: 180,
      }) as unknown,
      // 20 one-hour windows: each returns 60 measurements
      measurementsReturned: 1200,
    });
    expect(result.peakMemoryBytes).toBeGreaterThan(0);
    // A window that is not aligned on the hour overlaps two buckets.
    expect(result.bucketsExamined).toBeGreaterThan(20);
    expect(result.measurementsUnpacked).toBe(result.bucketsExamined * 60);
    expect(result.rejected).toBe(0);
    // The inputs were not changed by the replay.
    expect(docs[0]).toEqual({ ts: new Date(T0), s: 'a', v: 0 });
  });
});

describe('replay of refused measurements', () => {
  it('counts the measurements the engine refuses and replays the others', async () => {
    const docs = [
      { ts: new Date(T0), v: 1 },
      { ts: new Date(T0 + 1000), v: 'x'.repeat(16 * 1024 * 1024) }, // over 16 MiB
      { ts: new Date(T0 + 2000), v: 3 },
    ];
    const p = profileSample([docs[0]!, docs[2]!], 'ts', undefined);
    const result = await replayCandidate(
      { docs, profile: p, timeField: 'ts', metaField: undefined, queryWidthSeconds: 60 },
      candidatesFor(undefined, 1000)[0]!,
    );
    expect([result.rejected, result.measurements, result.buckets]).toEqual([1, 2, 1]);
    const report = await adviseOnSample({ docs, timeField: 'ts', metaField: undefined, skipped: 0 }, 60);
    expect(report.split('\n')[2]).toBe(
      "refused:  1 of the sample's measurements (the engine refuses them; not replayed)",
    );
  });
});

describe('recommendation', () => {
  const result = (
    kind: 'preset' | 'custom',
    span: number,
    bytes: number,
    unpacked: number,
    counters: CandidateResult['counters'] = {},
  ): CandidateResult => ({
    candidate:
      kind === 'preset'
        ? {
            kind,
            granularity: span === 3600 ? 'seconds' : span === 86400 ? 'minutes' : 'hours',
            spanSeconds: span,
            roundingSeconds: 60,
          }
        : { kind, spanSeconds: span, roundingSeconds: span },
    buckets: 10,
    measurements: 1000,
    compressedBytes: bytes * 1000,
    counters,
    peakMemoryBytes: 2048,
    bucketsExamined: 20,
    measurementsUnpacked: unpacked,
    measurementsReturned: 100,
    rejected: 0,
  });

  it('keeps the candidates within 15% of the best compression and reads the least among them', () => {
    const results = [
      result('preset', 3600, 20, 100), // compresses badly
      result('preset', 86400, 4.5, 300), // within 15%
      result('preset', 2592000, 4, 900, {
        numBucketsClosedDueToCount: 3,
        numBucketsClosedDueToTimeForward: 1,
      }),
      result('custom', 43200, 4.2, 250),
    ];
    const r = recommend(results, 60_000, 3600);
    expect(r.result).toBe(results[3]);
    expect(r.reason).toBe(
      'custom 12h (bucketMaxSpanSeconds = bucketRoundingSeconds = 43200). With one measurement every 1m per series, ' +
        'its buckets hold 100 measurements (none closed within the sample) at 4.2 bytes per measurement, 5% above the best compression (4.0); ' +
        'a 1h query unpacks 2.5 measurements per measurement returned, the fewest of the 3 candidates within 15% of the best compression.',
    );
  });

  it('prefers a granularity, then the shorter span, when reads are within 5%', () => {
    const results = [
      result('preset', 86400, 4, 104, { numBucketsClosedDueToCount: 3, numBucketsClosedDueToTimeForward: 1 }),
      result('preset', 2592000, 4, 100),
      result('custom', 900, 4, 100),
    ];
    const r = recommend(results, 1000, 900);
    expect(r.result).toBe(results[0]);
    expect(r.reason).toBe(
      "granularity 'minutes'. With one measurement every 1s per series, its buckets hold 100 measurements (mostly closed by count) " +
        'at 4.0 bytes per measurement, the best compression of the candidates; a 15m query unpacks 1.0 measurements per measurement ' +
        'returned, the fewest of the 3 candidates within 15% of the best compression.',
    );
    const alone = recommend(
      [result('preset', 3600, 50, 100), result('preset', 2592000, 4, 900)],
      undefined,
      86400,
    );
    expect(alone.reason).toBe(
      "granularity 'hours'. With no series reporting twice in the sample, its buckets hold 100 measurements (none closed within the sample) " +
        'at 4.0 bytes per measurement, the best compression of the candidates; a 1d query unpacks 9.0 measurements per measurement ' +
        'returned, and no other candidate compresses within 15% of the best.',
    );
  });

  it('formats cadences', () => {
    expect([250, 1000, 1500, 90_000, 3_600_000, 5_400_000].map(formatCadence)).toEqual([
      '250ms',
      '1s',
      '1.5s',
      '90s',
      '1h',
      '90m',
    ]);
  });
});

describe('advise from MongoDB (fake)', () => {
  it('samples a plain collection in natural order, converting times and skipping documents without one', async () => {
    const db = new FakeDb('metrics');
    const raw = db.collection('raw');
    await raw.insertOne({ at: new Date(T0), host: 'a', cpu: 0.5 });
    await raw.insertOne({ at: '2026-01-01T00:00:10Z', host: 'a', cpu: 0.25 });
    await raw.insertOne({ host: 'b', cpu: 1 });
    await raw.insertOne({ at: T0 + 20_000, host: 'a', cpu: 0.75 });
    const sample = await sampleFromDb(db, 'raw', { timeField: 'at', metaField: 'host', sample: 10 });
    expect(sample).toEqual({
      docs: [
        { at: new Date(T0), host: 'a', cpu: 0.5 },
        { at: new Date(T0 + 10_000), host: 'a', cpu: 0.25 },
        { at: new Date(T0 + 20_000), host: 'a', cpu: 0.75 },
      ],
      timeField: 'at',
      metaField: 'host',
      skipped: 1,
    });
    expect((await sampleFromDb(db, 'raw', { timeField: 'at', sample: 2 })).docs).toHaveLength(2);
    const report = await adviseOnSample(sample, 60);
    expect(report.split('\n').slice(0, 3)).toEqual([
      'sample:   3 measurements, 1 series, 2026-01-01T00:00:00.000Z to 2026-01-01T00:00:20.000Z',
      'cadence:  one measurement every 10s per series (median); 30.0 bytes per measurement as BSON (mean, without the meta)',
      'queries:  1 time-range query of 1m over all series',
    ]);
    expect(report.split('\n').at(-1)).toMatch(/^recommendation: granularity 'seconds'\. /u);
  });
});
