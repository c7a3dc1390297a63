/**
 * Slot arithmetic of rollups, in UTC epoch milliseconds: fixed-width slots (like `$dateTrunc` with
 * `binSize` in seconds from the epoch), calendar months and days, and the positions of a time inside a
 * calendar document (`days.<d>.hours.<h>.minutes.<m>`).
 *
 * @packageDocumentation
 */
import type { SlotWidth } from './spec.js';

/** Milliseconds of one calendar level. */
export const kLevelMs = { day: 86_400_000, hour: 3_600_000, minute: 60_000 } as const;

/**
 * Start of the slot holding `ms`.
 *
 * @param ms - a time, epoch ms.
 * @param width - the slot width.
 * @returns the slot start, epoch ms.
 */
export function slotStart(ms: number, width: SlotWidth): number {
  if (width.unit === 'month') return monthStart(ms);
  return ms - mod(ms, width.ms);
}

/**
 * Start of the slot after the one starting at `start`.
 *
 * @param start - a slot start.
 * @param width - the slot width.
 * @returns the next slot start.
 */
export function nextSlotStart(start: number, width: SlotWidth): number {
  if (width.unit === 'month') {
    const d = new Date(start);
    return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
  return start + width.ms;
}

/**
 * Start of the UTC month holding `ms`.
 *
 * @param ms - a time, epoch ms.
 * @returns the month start.
 */
export function monthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/**
 * Start of the calendar period holding `ms`.
 *
 * @param ms - a time.
 * @param period - `'month'` or `'day'`.
 * @returns the period start.
 */
export function periodStart(ms: number, period: 'month' | 'day'): number {
  return period === 'month' ? monthStart(ms) : ms - mod(ms, kLevelMs.day);
}

/**
 * End (exclusive) of the calendar period starting at `start`.
 *
 * @param start - a period start.
 * @param period - `'month'` or `'day'`.
 * @returns the next period's start.
 */
export function periodEnd(start: number, period: 'month' | 'day'): number {
  return period === 'month' ? nextSlotStart(start, { unit: 'month' }) : start + kLevelMs.day;
}

/**
 * Floor modulo (times before 1970 are negative).
 *
 * @param a - dividend.
 * @param b - divisor (positive).
 * @returns `a mod b` in `[0, b)`.
 */
export function mod(a: number, b: number): number {
  const r = a % b;
  return r < 0 ? r + b : r;
}
