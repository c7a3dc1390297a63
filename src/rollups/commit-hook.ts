/**
 * What the commit path calls (src/engine/write-commit.ts): the rollup gate around a batch's commit, and
 * the fold of the committed batch between its bucket write and the publication of its result.
 *
 * @packageDocumentation
 */
import type { WriteBatch } from '../catalog/write-batch.js';
import type { GateToken } from './rollup-gate.js';

/** A collection's rollups as the commit path sees them (a `RollupSet`). */
export interface CommitRollups {
  /** Enter the gate (synchronous unless a recomputation runs or waits). */
  enter(): GateToken | Promise<GateToken>;
  /** Leave the gate. */
  leave(token: GateToken): void;
  /** Whether the collection has no rollup (then {@link CommitRollups.fold} has nothing to do). */
  readonly empty: boolean;
  /** Fold a batch whose bucket write succeeded into every rollup; never throws. */
  fold(batch: WriteBatch): Promise<void>;
}

/**
 * Run one batch's commit inside the rollup gate: entered before the batch is prepared, left after its
 * fold, so that a recomputation never reads buckets holding measurements not yet folded.
 *
 * @param rollups - the collection's rollups, or `undefined` (no gate).
 * @param commit - the commit of one batch.
 * @returns when the commit is done.
 */
export async function withRollupGate(
  rollups: CommitRollups | undefined,
  commit: () => Promise<void>,
): Promise<void> {
  if (rollups === undefined) {
    await commit();
    return;
  }
  const entered = rollups.enter();
  // No await when the gate is open: the common case costs a counter increment.
  const token = entered instanceof Promise ? await entered : entered;
  try {
    await commit();
  } finally {
    rollups.leave(token);
  }
}
