/**
 * The writer's side of the commit protocol (MongoDB's `timeseries_write_ops`): stage measurements, commit
 * the batches this writer claims (in bucket-id order), wait for the others, and re-stage measurements
 * whose bucket was cleared before they committed.
 *
 * A measurement is acknowledged only after its batch's write to storage succeeded.
 *
 * @packageDocumentation
 */
import type {
  BucketCatalog,
  CombineWithInsertsFromOtherClients,
  InsertItem,
  PreparedCommit,
  StageResult,
} from '../catalog/bucket-catalog.js';
import type { BucketingOptions, ReopeningSource, WriteBatch } from '../catalog/bucket-catalog.js';
import { ErrorCodes, TimeseriesError } from '../errors.js';
import { withRollupGate } from '../rollups/commit-hook.js';
import type { CommitRollups } from '../rollups/commit-hook.js';
import type { BucketWriteOutcome, Storage } from '../storage/storage.js';
import { bucketIdOrder, commitTogether, settleWrite } from './commit-together.js';
import { firstInterleaved, orderedRoundEnd } from './ordered-rounds.js';

/** Per-item outcome of {@link commitMeasurements}. */
export type MeasurementOutcome =
  { readonly kind: 'inserted' } | { readonly kind: 'failed'; readonly error: unknown };

/** The outcome of every acknowledged measurement (shared: outcomes are read-only). */
const kInserted: MeasurementOutcome = Object.freeze({ kind: 'inserted' });

/** Marks the batches of one round as listed (see `WriteBatch.roundMark`); never reused. */
let nextRoundMark = 1;

/** How often measurements of a cleared bucket are re-staged before giving up. */
const kMaxClearedRetries = 8;

/** Where a batch goes and what the writer must do with it. */
interface CommitContext {
  readonly catalog: BucketCatalog;
  readonly storage: Storage;
  readonly bucketsNs: string;
  /** Reads buckets for reopening (absent: never reopen). */
  readonly reopeningSource?: ReopeningSource;
  /** The collection's rollups, folded in each commit (absent: none). */
  readonly rollups?: CommitRollups;
}

/**
 * Stage and commit measurements.
 *
 * @param ctx - catalog, storage and buckets namespace.
 * @param ns - the time-series namespace.
 * @param options - bucketing options.
 * @param items - measurements with time and series.
 * @param combine - `'allow'` for unordered inserts (group commit with other writers).
 * @returns one outcome per item.
 */
export async function commitMeasurements(
  ctx: CommitContext,
  ns: string,
  options: BucketingOptions,
  items: ReadonlyArray<InsertItem>,
  combine: CombineWithInsertsFromOtherClients,
): Promise<MeasurementOutcome[]> {
  const rounds =
    combine === 'disallow' &&
    (ctx.storage.atomicOrderedCommits !== true || ctx.storage.commitWrites === undefined);
  if (!rounds) return (await commitRound(ctx, ns, options, items, combine, false)).outcomes;
  // An ordered call on a storage without atomic ordered commits: one round at a time (see ordered-rounds).
  const outcomes = new Array<MeasurementOutcome>(items.length);
  let remaining: number[] = items.map((_, i) => i);
  while (remaining.length > 0) {
    const end = orderedRoundEnd(items, remaining, 0);
    const take = remaining.slice(0, end);
    // `remaining` is ascending, so all of it is `items` itself.
    const part = take.length === items.length ? items : take.map((i) => items[i] as InsertItem);
    const round = await commitRound(ctx, ns, options, part, combine, true);
    // Holes (not attempted after a failure, or deferred) stay holes.
    round.outcomes.forEach((outcome, j) => (outcomes[take[j] as number] = outcome));
    if (round.outcomes.some((outcome) => outcome.kind === 'failed')) break;
    remaining = [...round.deferred.map((j) => take[j] as number), ...remaining.slice(end)];
  }
  return outcomes;
}

/**
 * {@link commitMeasurements} of measurements written together (an ordered call's round).
 *
 * @param consecutive - every batch must hold consecutive measurements: from the first that breaks it
 *   (see {@link firstInterleaved}), the measurements are not written but returned as `deferred`.
 */
async function commitRound(
  ctx: CommitContext,
  ns: string,
  options: BucketingOptions,
  items: ReadonlyArray<InsertItem>,
  combine: CombineWithInsertsFromOtherClients,
  consecutive: boolean,
): Promise<{ readonly outcomes: MeasurementOutcome[]; readonly deferred: ReadonlyArray<number> }> {
  const outcomes = new Array<MeasurementOutcome>(items.length);
  const deferred: number[] = [];
  let pending: number[] = items.map((_, i) => i);
  const opId = ctx.catalog.newOpId();
  for (let attempt = 0; pending.length > 0; attempt++) {
    // The first attempt stages the items as they are; a retry only those pending.
    const round = attempt === 0 ? items : pending.map((i) => items[i] as InsertItem);
    const staged = await ctx.catalog.insert(ns, options, round, combine, opId, ctx.reopeningSource);
    // An ordered insert stops at its first failed measurement (`pending` is in input order). Staging groups
    // by series, so later measurements may be staged already: this call's batches (its own, keyed by its
    // opId) are then abandoned and the measurements before the failure staged again.
    const stop = combine === 'disallow' ? staged.findIndex((r) => r.kind === 'error') : -1;
    if (stop >= 0) {
      const failure = staged[stop] as Extract<StageResult, { kind: 'error' }>;
      outcomes[pending[stop] as number] = { kind: 'failed', error: failure.error };
      if (staged.some((r, j) => j > stop && r.kind === 'staged')) {
        await abandon(ctx, staged);
        pending = pending.slice(0, stop);
        continue;
      }
    }
    const cut = consecutive ? firstInterleaved(staged) : -1;
    if (cut > 0) {
      await abandon(ctx, staged);
      for (const i of pending.slice(cut)) Reflect.deleteProperty(outcomes, i);
      // In input order: a later cut defers measurements before those an earlier cut deferred.
      deferred.unshift(...pending.slice(cut));
      pending = pending.slice(0, cut);
      continue;
    }
    // The call's batches, each once, in order of their first measurement (ordered inserts commit in that
    // order): a pass over the results in input order, without a map of batch to measurements.
    const batches: WriteBatch[] = [];
    const mark = nextRoundMark++;
    for (let j = 0; j < staged.length; j++) {
      const result = staged[j] as StageResult;
      if (result.kind === 'error') {
        // After an ordered insert's first failure nothing more is attempted, so nothing more is reported.
        if (stop < 0) outcomes[pending[j] as number] = { kind: 'failed', error: result.error };
        continue;
      }
      if (result.batch.roundMark === mark) continue;
      result.batch.roundMark = mark;
      batches.push(result.batch);
    }
    // Commit what this writer claims, then wait for the rest. Unordered: in bucket-id order (STYLE rule
    // 3), several at a time. Ordered: one at a time in input order (by each batch's first measurement),
    // stopping at the first failure, so that nothing after a failed measurement is written.
    const ordered =
      combine === 'disallow' ? batches : bucketIdOrder(batches).map((i) => batches[i] as WriteBatch);
    if (ctx.storage.commitWrites !== undefined) {
      // One storage call for the whole round (one round trip across a network).
      await withRollupGate(ctx.rollups, () => commitTogether(ctx, ordered, opId, combine === 'disallow'));
    } else if (combine === 'disallow') await commitInOrder(ctx, ordered, opId);
    else await commitAll(ctx, ordered, opId, ctx.storage.writeConcurrency ?? 1);
    // A batch this writer committed is settled already: read it without a promise round trip. Either way
    // the outcome is then read from the batch's result.
    for (let k = 0; k < ordered.length; k++) {
      const batch = ordered[k] as WriteBatch;
      if (batch.result.state === 'pending') {
        await ctx.catalog.getWriteBatchResult(batch).catch(() => undefined);
      }
    }
    const retry: number[] = [];
    for (let j = 0; j < staged.length; j++) {
      const result = staged[j] as StageResult;
      if (result.kind !== 'staged') continue;
      const index = pending[j] as number;
      const outcome = result.batch.result;
      if (outcome.state === 'fulfilled') {
        outcomes[index] = kInserted;
        continue;
      }
      const error = outcome.error;
      const cleared =
        TimeseriesError.isTimeseriesError(error) && error.code === ErrorCodes.TimeseriesBucketCleared;
      if (cleared && attempt < kMaxClearedRetries) retry.push(index);
      else outcomes[index] = { kind: 'failed', error };
    }
    // In input order already: `staged` is.
    pending = retry;
    if (combine === 'disallow') pending = stopAtFirstFailure(outcomes, pending);
  }
  return { outcomes, deferred };
}

/** Abort this ordered call's staged batches (its own, keyed by its opId), so that it can stage again. */
async function abandon(ctx: CommitContext, staged: ReadonlyArray<StageResult>): Promise<void> {
  const abandoned = new Set<WriteBatch>();
  for (const r of staged) if (r.kind === 'staged') abandoned.add(r.batch);
  for (const batch of abandoned) {
    await ctx.catalog.abort(
      batch,
      new TimeseriesError('TimeseriesBucketCleared', 'ordered insert stopped at a failed measurement'),
    );
  }
}

/**
 * An ordered call's outcomes end at its first failed measurement: what comes after it is neither
 * reported nor retried (MongoDB's ordered contract). Measurements after it whose batch was stopped
 * before its commit (see {@link commitInOrder}) were not written. One case writes some after it: a
 * round whose earlier bucket's guard missed (another writer changed it) and whose later buckets were
 * written, the earlier measurements then failing for good on their retry. Those written stay reported as
 * inserted: the count says what is stored.
 *
 * @returns the measurements still to stage, those before the first failure.
 */
function stopAtFirstFailure(outcomes: MeasurementOutcome[], pending: ReadonlyArray<number>): number[] {
  let first = -1;
  for (let i = 0; i < outcomes.length; i++) {
    if (outcomes[i]?.kind === 'failed') {
      first = i;
      break;
    }
  }
  if (first < 0) return [...pending];
  // Holes are skipped by the caller's iteration: "not attempted".
  for (let i = first + 1; i < outcomes.length; i++) {
    if (outcomes[i]?.kind !== 'inserted') Reflect.deleteProperty(outcomes, i);
  }
  return pending.filter((i) => i < first);
}

/**
 * Commit an ordered call's batches one at a time, in input order. After a batch that is not written (it
 * failed, or its bucket was cleared and its measurements will be staged again), the batches after it are
 * not committed: they are aborted as cleared, so that their measurements are staged again after it (and
 * dropped if it then fails).
 *
 * @param ctx - catalog, storage and buckets namespace.
 * @param batches - the call's batches, by first measurement.
 * @param opId - this writer's opId.
 */
async function commitInOrder(
  ctx: CommitContext,
  batches: ReadonlyArray<WriteBatch>,
  opId: number,
): Promise<void> {
  let failed = false;
  for (const batch of batches) {
    if (failed) {
      await ctx.catalog.abort(
        batch,
        new TimeseriesError('TimeseriesBucketCleared', 'ordered insert stopped at a failed measurement'),
      );
      continue;
    }
    if (ctx.catalog.claimWriteBatchCommitRights(batch, opId)) await commitBatch(ctx, batch);
    // A cleared batch stops the call too: its measurements are staged again and may still fail, so
    // nothing after them may be written before they are.
    failed = batch.result.state === 'rejected';
  }
}

/**
 * Claim and commit batches in the given order, at most `concurrency` commits at a time. Each batch is
 * claimed just before its commit (as the server does), so that a batch another writer reaches first is
 * committed by that writer instead of waiting behind this writer's earlier commits.
 *
 * Concurrent commits cannot deadlock: a commit holds its bucket's prepared slot only while it writes and
 * finishes, and waits for another writer's prepared batch only before taking a slot (prepareCommit).
 *
 * @param ctx - catalog, storage and buckets namespace.
 * @param batches - the batches this writer staged into, in bucket-id order.
 * @param opId - this writer's opId.
 * @param concurrency - most commits in flight (the storage's `writeConcurrency`).
 */
async function commitAll(
  ctx: CommitContext,
  batches: ReadonlyArray<WriteBatch>,
  opId: number,
  concurrency: number,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < batches.length) {
      const batch = batches[next++] as WriteBatch;
      if (ctx.catalog.claimWriteBatchCommitRights(batch, opId)) {
        await withRollupGate(ctx.rollups, () => commitBatch(ctx, batch));
      }
    }
  };
  if (concurrency <= 1) {
    await worker();
    return;
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, batches.length) }, worker));
}

/**
 * Commit one claimed batch: prepare, write to storage, then finish; abort on any failure. Never throws:
 * the outcome is published through the batch's result.
 *
 * @param ctx - catalog, storage and buckets namespace.
 * @param batch - a batch whose commit rights this writer holds.
 */
export async function commitBatch(ctx: CommitContext, batch: WriteBatch): Promise<void> {
  let prepared: PreparedCommit;
  let outcome: BucketWriteOutcome;
  try {
    // Inside the try: a failure building the bucket document aborts this batch like a failed write.
    prepared = await ctx.catalog.prepareCommit(batch);
    if (prepared.kind === 'aborted') return;
    if (prepared.kind === 'insert') {
      await ctx.storage.insertOne(ctx.bucketsNs, prepared.document as unknown as Record<string, unknown>);
      outcome = kApplied;
    } else {
      const result = await ctx.storage.applyCommit(ctx.bucketsNs, prepared.commit);
      outcome = result.kind === 'notMatched' ? kNotMatched : kApplied;
    }
  } catch (error) {
    await settleWrite(ctx, batch, undefined, { kind: 'failed', error });
    return;
  }
  await settleWrite(ctx, batch, prepared, outcome);
}

/** Outcomes of a single write (shared: outcomes are read-only). */
const kApplied: BucketWriteOutcome = Object.freeze({ kind: 'applied' });
const kNotMatched: BucketWriteOutcome = Object.freeze({ kind: 'notMatched' });
