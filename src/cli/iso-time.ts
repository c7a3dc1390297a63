/**
 * ISO 8601 times as the command line reads them, the same on every machine: `Date.parse` reads a time
 * without an offset in the machine's time zone, rolls impossible dates over (`2026-02-30` is 2 March,
 * `T24:00` the next day) and takes formats that are not ISO 8601 at all (`01/02/2026`). Here a time
 * without an offset is UTC (as MongoDB's `$dateFromString` reads it), and a date or a time of day out of
 * range is not a time.
 *
 * Read: a calendar date `YYYY-MM-DD` (or a six-digit year with its sign, `+002026-01-01`), optionally
 * followed by `T` (or a space) and `hh:mm`, `hh:mm:ss` or `hh:mm:ss.fraction` (a comma may stand for the
 * point; digits beyond milliseconds are cut), optionally followed by `Z` or an offset `±hh:mm`, `±hhmm` or
 * `±hh`; and the basic form of the same, `YYYYMMDDThhmmss[.fraction][Z|±hhmm]`.
 *
 * @packageDocumentation
 */

/** The extended form: separators between the parts. */
const kExtended =
  /^([+-]\d{6}|\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?)?$/;
/** The basic form: no separators, a time of day with seconds. */
const kBasic = /^(\d{4})(\d{2})(\d{2})[Tt](\d{2})(\d{2})(\d{2})(?:[.,](\d+))?(Z|z|[+-]\d{2}(?:\d{2})?)?$/;

/** Days in each month of a common year. */
const kMonthDays = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * The epoch milliseconds of an ISO 8601 date or date and time (see the module comment).
 *
 * @param text - the string.
 * @returns the time, or `undefined` when the string is not such a time, names a day or a time of day
 *   that does not exist, or lies outside what a `Date` holds.
 * @example
 * ```ts
 * parseIsoTime('2026-01-01T10:00:00'); // 1767261600000 (UTC, whatever TZ says)
 * parseIsoTime('2026-02-30');          // undefined
 * ```
 */
export function parseIsoTime(text: string): number | undefined {
  const m = kExtended.exec(text) ?? kBasic.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s, fraction, offset] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = h === undefined ? 0 : Number(h);
  const minute = mi === undefined ? 0 : Number(mi);
  const second = s === undefined ? 0 : Number(s);
  if (year === 0 && y?.startsWith('-') === true) return undefined; // -000000 is not a year (ISO 8601)
  if (month < 1 || month > 12) return undefined;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 && leap ? 29 : (kMonthDays[month - 1] as number);
  if (day < 1 || day > days || hour > 23 || minute > 59 || second > 59) return undefined;
  const ms = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
  let offsetMinutes = 0;
  if (offset !== undefined && offset !== 'Z' && offset !== 'z') {
    const digits = offset.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2)) : 0;
    if (oh > 23 || om > 59) return undefined;
    offsetMinutes = (offset.startsWith('-') ? -1 : 1) * (oh * 60 + om);
  }
  // Date.UTC reads years 0-99 as 1900-1999: set the year on a date instead.
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, ms));
  date.setUTCFullYear(year);
  const time = date.getTime() - offsetMinutes * 60_000;
  return Number.isNaN(time) || Math.abs(time) > 8.64e15 ? undefined : time;
}
