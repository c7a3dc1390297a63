/**
 * Staged measurements held as rows of their call (see `PackedRows` in `util/packed-rows.ts`).
 *
 * @packageDocumentation
 */
import type { Measurement } from '../bucket-format/bucket-document.js';
import type { MeasurementLayout, RowPlan } from '../util/bson-validation.js';
import type { PackedRows } from '../util/packed-rows.js';
import { defineField } from '../util/safe-record.js';
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
    if (this.#measurement !== undefined) return this.#measurement;
    const { names, kinds } = this.layout;
    const { metaAt } = this.plan;
    const values = this.rows.values;
    // A copy of the layout's template has every field already, in order: each is then set in place, which
    // costs far less than adding the fields one by one to an empty object. An own `__proto__` field of the
    // template is set as a field too (an existing own property is written, never the prototype).
    const out: Record<string, unknown> = { ...templateOf(this.layout, this.plan) };
    let v = this.row;
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      if (i === metaAt) out[name] = this.metadata.normalizedMeta;
      else {
        const x = values[v++] as number;
        out[name] = kinds[i] === kDateValueKind ? new Date(x) : x;
      }
    }
    this.#measurement = out;
    return out;
  }
}

/** The `valueKind` of a date. */
const kDateValueKind = 2;

/** Per row plan, an object with its layout's fields in order (values of their kinds; the meta `null`). */
const templates = new WeakMap<RowPlan, Measurement>();

function templateOf(layout: MeasurementLayout, plan: RowPlan): Measurement {
  let template = templates.get(plan);
  if (template === undefined) {
    template = {};
    const { names, kinds } = layout;
    for (let i = 0; i < names.length; i++) {
      const kind = i === plan.metaAt ? -1 : kinds[i];
      defineField(
        template,
        names[i] as string,
        kind === kDateValueKind ? new Date(0) : kind === -1 ? null : 0.5,
      );
    }
    templates.set(plan, template);
  }
  return template;
}
