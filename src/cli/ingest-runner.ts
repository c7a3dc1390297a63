/**
 * Feeding measurements read from a file into a collection: batches of `batchSize` in input order, several
 * writers in parallel (`insertMany` with `ordered: false`, so that their batches share group commits),
 * bad lines and rejected measurements collected with their line numbers.
 *
 * @packageDocumentation
 */
import type { TimeseriesCollection } from '../engine/timeseries-collection.js';
import { BulkWriteError } from '../errors.js';
import type { ReadRecord } from './readers.js';

/** A line that did not become a stored measurement. */
export interface RejectedLine {
  /** 1-based line number. */
  readonly line: number;
  /** Why. */
  readonly reason: string;
}

/** Options of {@link ingestRecords}. */
export interface IngestRunOptions {
  /** Measurements per `insertMany`. */
  readonly batchSize: number;
  /** Concurrent writers. */
  readonly writers: number;
  /** `'strict'`: stop at the first rejected line; `'skip'`: report it and go on. */
  readonly onRejected: 'strict' | 'skip';
  /** Called after each batch with the measurements handled so far. */
  readonly onProgress?: (measurements: number) => void;
}

/** Result of {@link ingestRecords}. */
export interface IngestRunResult {
  /** Measurements stored. */
  readonly inserted: number;
  /** Rejected lines in line order. */
  readonly rejected: ReadonlyArray<RejectedLine>;
  /** Wall-clock seconds. */
  readonly seconds: number;
  /** `'complete'`, or `'stopped'` when `strict` stopped at a rejected line. */
  readonly outcome: 'complete' | 'stopped';
}

interface Batch {
  readonly docs: Record<string, unknown>[];
  readonly lines: number[];
}

/**
 * Insert every measurement of `records` into `coll`.
 *
 * @param coll - the collection.
 * @param records - the input.
 * @param options - batching, writers, strictness, progress.
 * @returns counts, rejected lines and time.
 * @throws what `insertMany` throws other than a `BulkWriteError` (storage failures).
 */
export async function ingestRecords(
  coll: TimeseriesCollection,
  records: AsyncIterable<ReadRecord>,
  options: IngestRunOptions,
): Promise<IngestRunResult> {
  const rejected: RejectedLine[] = [];
  let inserted = 0;
  let handled = 0;
  // An object, not a `let`: the writers set it while the reader checks it.
  const state = { stop: false };
  const iterator = records[Symbol.asyncIterator]();
  // One reader hands batches to the writers: the iterator is not re-entrant, so the next batch is read
  // behind a promise chain.
  let reading: Promise<Batch | undefined> = Promise.resolve(undefined);
  const nextBatch = (): Promise<Batch | undefined> => {
    reading = reading.then(async () => {
      if (state.stop) return undefined;
      const batch: Batch = { docs: [], lines: [] };
      while (batch.docs.length < options.batchSize) {
        const next = await iterator.next();
        if (next.done === true) break;
        const record = next.value;
        if (record.kind === 'bad') {
          rejected.push({ line: record.line, reason: record.reason });
          if (options.onRejected === 'strict') {
            state.stop = true;
            break;
          }
          continue;
        }
        batch.docs.push(record.doc);
        batch.lines.push(record.line);
      }
      return batch.docs.length === 0 ? undefined : batch;
    });
    return reading;
  };
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: options.writers }, async () => {
      for (let batch = await nextBatch(); batch !== undefined; batch = await nextBatch()) {
        try {
          inserted += (await coll.insertMany(batch.docs, { ordered: false })).insertedCount;
        } catch (error) {
          if (!BulkWriteError.isBulkWriteError(error)) throw error;
          inserted += error.insertedCount;
          for (const e of error.writeErrors) {
            rejected.push({ line: batch.lines[e.index] ?? 0, reason: `${e.codeName}: ${e.errmsg}` });
          }
          if (options.onRejected === 'strict') state.stop = true;
        }
        handled += batch.docs.length;
        options.onProgress?.(handled);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  rejected.sort((a, b) => a.line - b.line);
  return { inserted, rejected, seconds, outcome: state.stop ? 'stopped' : 'complete' };
}
