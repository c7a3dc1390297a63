/**
 * Bounded exponential backoff with full jitter for transient driver errors.
 *
 * @packageDocumentation
 */
import { isTopologyClosed, isTransientMongoError } from './mongo-storage-error.js';
import type { ResolvedRetryConfig } from './mongo-storage-options.js';

/** Outcome of {@link runWithRetries}. */
export type RetryOutcome<T> =
  /** An attempt succeeded. */
  | { readonly kind: 'ok'; readonly value: T; readonly attempts: number }
  /** A non-transient error, or a transient one after the last retry. */
  | { readonly kind: 'failed'; readonly error: unknown; readonly attempts: number };

/**
 * The delay before retry `retryIndex` (0 for the first retry): uniform in
 * `[0, min(maxDelayMs, initialDelayMs * 2^retryIndex))`.
 *
 * @param config - the retry policy.
 * @param retryIndex - 0-based retry number.
 * @returns milliseconds to wait.
 */
export function backoffDelayMs(config: ResolvedRetryConfig, retryIndex: number): number {
  const bound = Math.min(config.maxDelayMs, config.initialDelayMs * 2 ** retryIndex);
  return Math.floor(config.random() * bound);
}

/**
 * Run `attempt` until it succeeds, fails with a non-transient error, or `maxRetries` retries are spent.
 *
 * `attempt` receives the 0-based attempt number: an attempt after the first knows that an earlier one
 * failed with a transient error and may nevertheless have been applied by the server (a write whose reply
 * was lost), and must resolve that ambiguity itself.
 *
 * @param config - the retry policy.
 * @param attempt - one try of the operation.
 * @param isTransient - which errors are retried.
 * @returns the value, or the last error with the number of attempts.
 */
export async function runWithRetries<T>(
  config: ResolvedRetryConfig,
  attempt: (attemptNumber: number) => Promise<T>,
  isTransient: (error: unknown) => boolean = isTransientMongoError,
): Promise<RetryOutcome<T>> {
  let lastTransient: unknown;
  for (let n = 0; ; n++) {
    try {
      return { kind: 'ok', value: await attempt(n), attempts: n + 1 };
    } catch (error) {
      if (n >= config.maxRetries || !isTransient(error)) {
        // A client whose first connection failed closes its topology: the retries then fail with "Topology
        // is closed", which hides why. The error reported is the one that names the cause.
        const reported = lastTransient !== undefined && isTopologyClosed(error) ? lastTransient : error;
        return { kind: 'failed', error: reported, attempts: n + 1 };
      }
      lastTransient = error;
      await config.sleep(backoffDelayMs(config, n));
    }
  }
}
