import { InternalInvariantError } from '../errors.js';

/**
 * Assert an internal invariant; a failure is a bug in tsbuckets.
 *
 * @param condition - what must hold.
 * @param code - unique code of the call site.
 * @param message - what was expected.
 * @throws {@link InternalInvariantError} when `condition` is false.
 */
export function invariant(condition: unknown, code: number, message: string): asserts condition {
  if (!condition) throw new InternalInvariantError(code, message);
}
