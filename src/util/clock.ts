/**
 * Injected time. Nothing below the facade calls `Date.now()`: the engine passes its clock down so tests
 * drive time exactly.
 *
 * @packageDocumentation
 */

/** Returns the current time in epoch milliseconds. */
export type Clock = () => number;

/** The wall clock. */
export const systemClock: Clock = () => Date.now();
