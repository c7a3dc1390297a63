/**
 * Measurement streams shaped like ingest, for the properties of the checks that look at a measurement's
 * fields (flat shapes, layouts): a few template measurements reused with their numbers replaced.
 */
import fc from 'fast-check';

/**
 * Measurements of distinct names drawn from `names`, each with a value drawn from `values`. Own data
 * properties: `Object.fromEntries` defines `'__proto__'` as an own field, as validation does.
 *
 * @param names - field names.
 * @param values - field values.
 * @returns the arbitrary.
 */
export function measurementArb(
  names: fc.Arbitrary<string>,
  values: fc.Arbitrary<unknown>,
): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .uniqueArray(fc.tuple(names, values), { selector: ([n]) => n, maxLength: 5 })
    .map((entries) => Object.fromEntries(entries) as Record<string, unknown>);
}

/**
 * Streams that repeat shapes: 1–3 templates from `measurement`, then 1–30 measurements, each a template
 * with its numbers replaced by one double. `extra` draws something more per measurement, which `finish`
 * applies (given the templates too).
 *
 * @param measurement - the templates' arbitrary.
 * @param extra - one more value per measurement.
 * @param finish - makes the measurement from the template copy and the extra value.
 * @returns the arbitrary.
 */
export function templatedStreamArb<T>(
  measurement: fc.Arbitrary<Record<string, unknown>>,
  extra: fc.Arbitrary<T>,
  finish: (
    m: Record<string, unknown>,
    extra: T,
    templates: ReadonlyArray<Record<string, unknown>>,
  ) => Record<string, unknown>,
): fc.Arbitrary<Array<Record<string, unknown>>> {
  return fc
    .tuple(
      fc.array(measurement, { minLength: 1, maxLength: 3 }),
      fc.array(fc.tuple(fc.nat(5), fc.double(), extra), { minLength: 1, maxLength: 30 }),
    )
    .map(([templates, picks]) =>
      picks.map(([i, x, more]) => {
        const template = templates[i % templates.length] as Record<string, unknown>;
        const m = Object.fromEntries(
          Object.entries(template).map(([k, v]) => [k, typeof v === 'number' ? x : v]),
        );
        return finish(m, more, templates);
      }),
    );
}
