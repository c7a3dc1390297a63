import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';

import { Long } from 'bson';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { convertTimeField, formatOfPath, openMeasurementSource } from '../../src/cli/readers.js';
import type { ReadRecord } from '../../src/cli/readers.js';

async function readAll(records: AsyncIterable<ReadRecord>): Promise<ReadRecord[]> {
  const out: ReadRecord[] = [];
  for await (const r of records) out.push(r);
  return out;
}

const t = (iso: string): Date => new Date(iso);

describe('readers', () => {
  it('reads CSV: typed cells, empty cells absent, bad rows with their line numbers', async () => {
    const source = openMeasurementSource('test/fixtures/cli/weather.csv', { timeField: 'ts' });
    expect(source.totalBytes).toBeGreaterThan(0);
    const records = await readAll(source.records);
    expect(records).toEqual([
      {
        kind: 'measurement',
        line: 2,
        doc: { ts: t('2026-01-01T00:00:00Z'), sensor: 'a', temp: 21.5, humidity: 40, status: 'ok' },
      },
      {
        kind: 'measurement',
        line: 3,
        doc: { ts: t('2026-01-01T00:00:00Z'), sensor: 'b', temp: 19, humidity: 55, status: 'ok' },
      },
      {
        kind: 'measurement',
        line: 4,
        doc: { ts: t('2026-01-01T00:00:10Z'), sensor: 'a', temp: 21.7, humidity: 41, status: 'ok' },
      },
      {
        kind: 'measurement',
        line: 5,
        doc: { ts: t('2026-01-01T00:00:10Z'), sensor: 'b', temp: 19.2, humidity: 55 },
      },
      { kind: 'bad', line: 6, reason: '6 cells for 5 columns' },
      {
        kind: 'measurement',
        line: 7,
        doc: { ts: t('2026-01-01T00:00:20Z'), sensor: 'b', temp: 19.1, humidity: 56, status: 'ok' },
      },
      { kind: 'bad', line: 8, reason: `'ts' is not a valid time: "yesterday"` },
      {
        kind: 'measurement',
        line: 9,
        doc: { ts: t('2026-01-01T00:00:30Z'), sensor: 'a', temp: 22, humidity: 42, status: 'ok' },
      },
      {
        kind: 'measurement',
        line: 10,
        doc: { ts: t('2026-01-01T00:00:30Z'), sensor: 'b', temp: 19.4, humidity: 57, status: 'alarm' },
      },
    ]);
    expect(source.bytesRead()).toBe(source.totalBytes);
  });

  it('reads NDJSON as Extended JSON: dates in three forms, Long kept, bad lines reported', async () => {
    const records = await readAll(
      openMeasurementSource('test/fixtures/cli/weather.ndjson', { timeField: 'ts' }).records,
    );
    expect(records).toEqual([
      {
        kind: 'measurement',
        line: 1,
        doc: { ts: t('2026-01-01T00:00:00Z'), sensor: { id: 1, site: 'north' }, temp: 21.5 },
      },
      {
        kind: 'measurement',
        line: 2,
        doc: { ts: t('2026-01-01T00:01:00Z'), sensor: { site: 'north', id: 1 }, temp: 21.6 },
      },
      {
        kind: 'measurement',
        line: 3,
        doc: { ts: t('2026-01-01T00:02:00Z'), sensor: { id: 2, site: 'south' }, temp: 18.25 },
      },
      { kind: 'bad', line: 4, reason: `not JSON: Unexpected token 'o', "not json" is not valid JSON` },
      { kind: 'bad', line: 5, reason: "no 'ts' field" },
      {
        kind: 'measurement',
        line: 7,
        doc: { ts: t('2026-01-01T00:03:00Z'), sensor: { id: 1, site: 'north' }, temp: new Long(22) },
      },
    ]);
  });

  it('reads standard input for -, NDJSON unless told otherwise', async () => {
    const stdin = Readable.from(['{"ts": 0, "a": 1}\n[1]\n{"ts": "x"}\n']);
    const source = openMeasurementSource('-', { timeField: 'ts', stdin });
    expect(source.totalBytes).toBeUndefined();
    expect(await readAll(source.records)).toEqual([
      { kind: 'measurement', line: 1, doc: { ts: new Date(0), a: 1 } },
      { kind: 'bad', line: 2, reason: 'not a JSON object' },
      { kind: 'bad', line: 3, reason: `'ts' is not a valid time: "x"` },
    ]);
    const csv = openMeasurementSource('-', {
      timeField: 't',
      format: 'csv',
      stdin: Readable.from(['t,v\n5,true\n']),
    });
    expect(await readAll(csv.records)).toEqual([
      { kind: 'measurement', line: 2, doc: { t: new Date(5), v: true } },
    ]);
  });

  it('skips the byte order mark that starts a file (spreadsheets write one), and only that one', async () => {
    // A UTF-8 BOM, as a file's first bytes: the first CSV header and the first JSON line are what
    // follows it. A U+FEFF anywhere else is data.
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const csv = openMeasurementSource('-', {
      timeField: 't',
      format: 'csv',
      stdin: Readable.from([Buffer.concat([bom, Buffer.from('t,v\n5,\uFEFFx\n')])]),
    });
    expect(await readAll(csv.records)).toEqual([
      { kind: 'measurement', line: 2, doc: { t: new Date(5), v: '\uFEFFx' } },
    ]);
    const ndjson = openMeasurementSource('-', {
      timeField: 'ts',
      // Split inside the mark: the reader decodes across chunks.
      stdin: Readable.from([
        bom.subarray(0, 2),
        Buffer.from([0xbf]),
        Buffer.from('{"ts": 1}\n\uFEFF{"ts": 2}\n'),
      ]),
    });
    const records = await readAll(ndjson.records);
    expect(records[0]).toEqual({ kind: 'measurement', line: 1, doc: { ts: new Date(1) } });
    expect(records[1]).toMatchObject({ kind: 'bad', line: 2 });
    expect(records).toHaveLength(2);
  });

  it('takes the format from the extension and refuses what is not a time', () => {
    expect(
      ['a.csv', 'A.CSV', 'a.ndjson', 'a.json', '-', 'a.csv.gz', 'a.ndjson.gz'].map(formatOfPath),
    ).toEqual(['csv', 'csv', 'ndjson', 'ndjson', 'ndjson', 'csv', 'ndjson']);
    expect(convertTimeField({ ts: true }, 'ts')).toBe(
      "'ts' is not a date, an ISO 8601 string or epoch milliseconds",
    );
    expect(convertTimeField({ ts: new Date(NaN) }, 'ts')).toBe("'ts' is an invalid date");
    const doc: Record<string, unknown> = { ts: '1970-01-01T00:00:01Z' };
    expect(convertTimeField(doc, 'ts')).toBeUndefined();
    expect(doc).toEqual({ ts: new Date(1000) });
  });

  it('reads ISO 8601 times the same in every time zone, without an offset as UTC, and refuses impossible ones', async () => {
    const zone = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      // Arrange: the same instants written in several ISO 8601 forms, and times that do not exist.
      const good: Array<[string, string]> = [
        ['2026-01-01', '2026-01-01T00:00:00.000Z'],
        ['2026-01-01T10:00', '2026-01-01T10:00:00.000Z'],
        ['2026-01-01 10:00:00', '2026-01-01T10:00:00.000Z'],
        ['2026-01-01T10:00:00.1234+02:00', '2026-01-01T08:00:00.123Z'],
        ['2026-01-01T10:00:00,5-0530', '2026-01-01T15:30:00.500Z'],
        ['20260101T100000Z', '2026-01-01T10:00:00.000Z'],
        ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
        ['0099-06-01', '0099-06-01T00:00:00.000Z'],
        ['-000001-01-01T00:00:00Z', '-000001-01-01T00:00:00.000Z'],
      ];
      const bad = [
        '2026-02-29',
        '2026-02-30',
        '2026-04-31',
        '2026-13-01',
        '2026-01-01T24:00:00',
        '2026-01-01T10:60',
        '01/02/2026',
        'Thu Jan 01 2026',
        '+275760-09-13T00:00:00.001Z',
      ];
      // Act / Assert
      for (const [text, iso] of good) {
        const doc: Record<string, unknown> = { ts: text };
        expect(convertTimeField(doc, 'ts'), text).toBeUndefined();
        expect((doc.ts as Date).toISOString(), text).toBe(iso);
      }
      for (const text of bad) {
        expect(convertTimeField({ ts: text }, 'ts'), text).toBe(
          `'ts' is not a valid time: ${JSON.stringify(text)}`,
        );
      }
      // An Extended JSON date string is read the same way (a time field or any other).
      const lines = [
        '{"ts": {"$date": "2026-01-01T10:00:00"}, "at": {"$date": "2026-01-02"}}',
        '{"ts": {"$date": "2026-02-30T00:00:00Z"}}',
      ];
      const stdin = Readable.from([lines.join('\n')]);
      const records = await readAll(openMeasurementSource('-', { timeField: 'ts', stdin }).records);
      expect(records).toEqual([
        {
          kind: 'measurement',
          line: 1,
          doc: { ts: t('2026-01-01T10:00:00Z'), at: t('2026-01-02T00:00:00Z') },
        },
        { kind: 'bad', line: 2, reason: "'ts' is an invalid date" },
      ]);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('reads CSV past a stray quote, with any line ending on any line, and refuses a repeated column', async () => {
    const csv = (text: string) =>
      readAll(
        openMeasurementSource('-', { timeField: 't', format: 'csv', stdin: Readable.from([text]) }).records,
      );
    // A quote that does not end its cell is text; the rows after it are read.
    expect(await csv('t,v\n1,"bad"quote\n2,2\n3,"x"\n4,"a ""b"", c"\n')).toEqual([
      { kind: 'measurement', line: 2, doc: { t: new Date(1), v: '"bad"quote' } },
      { kind: 'measurement', line: 3, doc: { t: new Date(2), v: 2 } },
      { kind: 'measurement', line: 4, doc: { t: new Date(3), v: 'x' } },
      { kind: 'measurement', line: 5, doc: { t: new Date(4), v: 'a "b", c' } },
    ]);
    // The first line ends in LF, the others in CRLF or CR.
    expect(await csv('t,v\n1,1\r\n2,2\r3,3\n')).toEqual([
      { kind: 'measurement', line: 2, doc: { t: new Date(1), v: 1 } },
      { kind: 'measurement', line: 3, doc: { t: new Date(2), v: 2 } },
      { kind: 'measurement', line: 4, doc: { t: new Date(3), v: 3 } },
    ]);
    // Two columns of one name: every row would lose a cell.
    expect(await csv('t,v,v\n1,1,2\n')).toEqual([
      { kind: 'bad', line: 1, reason: "column 'v' appears twice in the header" },
    ]);
  });

  it('reads a .gz file through gunzip, and names the input in a read error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsbuckets-readers-'));
    for (const fixture of ['weather.csv', 'weather.ndjson']) {
      const plain = `test/fixtures/cli/${fixture}`;
      const packed = join(dir, `${fixture}.gz`);
      const bytes = gzipSync(readFileSync(plain));
      writeFileSync(packed, bytes);
      const source = openMeasurementSource(packed, { timeField: 'ts' });
      expect(await readAll(source.records)).toEqual(
        await readAll(openMeasurementSource(plain, { timeField: 'ts' }).records),
      );
      // Progress counts the file's bytes: compressed ones.
      expect(source.totalBytes).toBe(bytes.length);
      expect(source.bytesRead()).toBe(bytes.length);
      // Cut short: the archive's error, with the file's name and zlib's code.
      const cut = join(dir, `cut-${fixture}.gz`);
      writeFileSync(cut, bytes.subarray(0, bytes.length - 12));
      await expect(readAll(openMeasurementSource(cut, { timeField: 'ts' }).records)).rejects.toMatchObject({
        message: `${cut}: unexpected end of file`,
        code: 'Z_BUF_ERROR',
      });
    }
    // A read error of a CSV input ends its records (it was an unhandled error event of the stream).
    await expect(
      readAll(openMeasurementSource(dir, { timeField: 'ts', format: 'csv' }).records),
    ).rejects.toMatchObject({
      message: `${dir}: EISDIR: illegal operation on a directory, read`,
      code: 'EISDIR',
    });
  });

  describe('a JSON array of documents', () => {
    /** The records of `chunks` given as standard input (NDJSON, the default format). */
    const readJson = (chunks: ReadonlyArray<string | Buffer>): Promise<ReadRecord[]> =>
      readAll(openMeasurementSource('-', { timeField: 'ts', stdin: Readable.from(chunks) }).records);

    it('reads each element as a measurement, numbered by the line it starts on', async () => {
      const text = [
        '',
        '  [',
        '  {"ts": {"$date": "2026-01-01T00:00:00Z"}, "s": "a,]\\"}{[", "n": {"$numberLong": "7"}},',
        '  {"ts": 2000,',
        '   "nested": {"list": [1, [2, {"x": "]"}]]}},',
        '  [1], 5, {"ts": "x"}, {"ts": 3, "oops"}, {"ts": 4}',
        ']',
        '',
      ].join('\n');
      // The parser's own message after "not JSON: " differs between Node versions.
      const records = (await readJson([text])).map((r) =>
        r.kind === 'bad' && r.reason.startsWith('not JSON: ') ? { ...r, reason: 'not JSON' } : r,
      );
      expect(records).toEqual([
        {
          kind: 'measurement',
          line: 3,
          doc: { ts: new Date('2026-01-01T00:00:00Z'), s: 'a,]"}{[', n: Long.fromNumber(7) },
        },
        { kind: 'measurement', line: 4, doc: { ts: new Date(2000), nested: { list: [1, [2, { x: ']' }]] } } },
        { kind: 'bad', line: 6, reason: 'not a JSON object' },
        { kind: 'bad', line: 6, reason: 'not a JSON object' },
        { kind: 'bad', line: 6, reason: `'ts' is not a valid time: "x"` },
        { kind: 'bad', line: 6, reason: 'not JSON' },
        { kind: 'measurement', line: 6, doc: { ts: new Date(4) } },
      ]);
    });

    it('reports an empty element, text after the array and an array left open, once each', async () => {
      expect(await readJson(['[]'])).toEqual([]);
      expect(await readJson(['\uFEFF [ \n ] \n'])).toEqual([]);
      expect(await readJson(['[{"ts": 1},\n]'])).toEqual([
        { kind: 'measurement', line: 1, doc: { ts: new Date(1) } },
        { kind: 'bad', line: 2, reason: 'an empty array element' },
      ]);
      expect(await readJson(['[{"ts": 1}]\n{"ts": 2}\n{"ts": 3}\n'])).toEqual([
        { kind: 'measurement', line: 1, doc: { ts: new Date(1) } },
        { kind: 'bad', line: 2, reason: 'text after the JSON array' },
      ]);
      expect(await readJson(['[{"ts": 1},\n{"ts": 2'])).toEqual([
        { kind: 'measurement', line: 1, doc: { ts: new Date(1) } },
        { kind: 'bad', line: 2, reason: 'the JSON array is not closed' },
      ]);
    });

    it('gives the same records however the bytes are split into chunks', async () => {
      const element = fc.record({
        ts: fc.integer({ min: 0, max: 2 ** 40 }),
        s: fc.oneof(
          fc.string({ unit: 'binary', maxLength: 6 }),
          fc.constantFrom('\\', '"', '],[', '}{', '\\"]'),
        ),
        // Numbers plain JSON gives back as the same JS number: int32s and doubles that are not integral.
        v: fc.oneof(
          fc.integer(),
          fc.integer().map((x) => x + 0.5),
          fc.array(fc.integer(), { maxLength: 3 }),
        ),
      });
      await fc.assert(
        fc.asyncProperty(
          fc.array(element, { maxLength: 6 }),
          fc.array(fc.constantFrom(' ', '\n', '\r\n', '\t'), { maxLength: 4 }),
          fc.array(fc.nat(), { maxLength: 8 }),
          async (docs, space, cuts) => {
            // Arrange: the documents as one array, white space between the tokens, and its UTF-8 bytes cut
            // anywhere (inside a character too).
            const gap = space.join('');
            const text = `${gap}[${gap}${docs.map((d) => JSON.stringify(d)).join(`${gap},${gap}`)}${gap}]${gap}`;
            const bytes = Buffer.from(text);
            const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
            const chunks = [0, ...at].map((from, i) => bytes.subarray(from, at[i] ?? bytes.length));
            // Act
            const records = await readJson(chunks.filter((c) => c.length > 0));
            // Assert
            expect(records.map((r) => (r.kind === 'measurement' ? r.doc : r))).toEqual(
              docs.map((d) => ({ ...d, ts: new Date(d.ts) })),
            );
          },
        ),
        { numRuns: 200 },
      );
    });
  });
});
