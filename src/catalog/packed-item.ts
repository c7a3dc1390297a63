/**
 * Staged measurements held as rows of their call (see `PackedRows` in `util/packed-rows.ts`).
 *
 * @packageDocumentation
 */
import type { Measurement } from '../bucket-format/bucket-document.js';
import { rowMeasurement } from '../util/bson-validation.js';
import type { MeasurementLayout, RowPlan } from '../util/bson-validation.js';
import type { PackedRows } from '../util/packed-rows.js';
import type { InsertItem } from './bucket-catalog-internal.js';
import type { BucketMetadata } from './bucket-metadata.js';

/**
 * A measurement its validation walk packed into a row of its call (`packOrCopy` in
 * `util/bson-validation.ts`) instead of copying it: a compressed bucket's commit packs the row into the
 * bucket's columns ({@link PackedItem.row}), and rollups fold it from the row; the measurement itself is
 * built from the row only when something asks for it (a new bucket's checks, a bucket that does not know
 * its layout, a batch sorted by time, a reader of `WriteBatch.measurements`), with the fields, values and
 * meta its copy would have held.
 */
export class PackedItem implements InsertItem {
  #measurement: Measurement | undefined;

  /**
   * @param rows - the call's rows.
   * @param row - where this measurement's row starts.
   * @param timeMs - its time, epoch ms.
   * @param metadata - its series (its normalised meta is the stored meta).
   * @param layout - its layout, which has a row plan for `metaField`.
   * @param plan - that plan.
   */
  constructor(
    readonly rows: PackedRows,
    readonly row: number,
    readonly timeMs: number,
    readonly metadata: BucketMetadata,
    readonly layout: MeasurementLayout,
    readonly plan: RowPlan,
  ) {}

  /** The measurement, built from the row on first use. */
  get measurement(): Measurement {
    this.#measurement ??= rowMeasurement(
      this.layout,
      this.plan.metaAt,
      this.rows.values,
      this.row,
      this.layout.names.length,
      this.metadata.normalizedMeta,
    );
    return this.#measurement;
  }
}
