/**
 * Why a bucket stops accepting measurements, and what happens to it then (docs/mongodb-behaviour.md §5.1;
 * `bucket_catalog/rollover.h`).
 *
 * | reason          | action      | meaning                                                             |
 * |-----------------|-------------|---------------------------------------------------------------------|
 * | `none`          | `none`      | the measurement fits                                                |
 * | `timeForward`   | `softClose` | closed; may later be reopened by a query                            |
 * | `timeBackward`  | `archive`   | removed from memory; a small archived record is kept for reopening  |
 * | `count`         | `hardClose` | closed                                                              |
 * | `size`          | `hardClose` | closed                                                              |
 * | `cachePressure` | `hardClose` | closed (never produced here: there is no storage cache to size by)  |
 * | `schemaChange`  | `hardClose` | closed                                                              |
 *
 * @packageDocumentation
 */

/** Why a bucket rolls over. */
export type RolloverReason =
  'none' | 'timeForward' | 'timeBackward' | 'count' | 'size' | 'cachePressure' | 'schemaChange';

/** What happens to a bucket that rolls over. */
export type RolloverAction = 'none' | 'softClose' | 'archive' | 'hardClose';

/** The action MongoDB takes for each reason. */
export const rolloverActionFor: Readonly<Record<RolloverReason, RolloverAction>> = Object.freeze({
  none: 'none',
  timeForward: 'softClose',
  timeBackward: 'archive',
  count: 'hardClose',
  size: 'hardClose',
  cachePressure: 'hardClose',
  schemaChange: 'hardClose',
});
