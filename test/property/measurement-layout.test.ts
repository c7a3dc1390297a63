/**
 * The validation walk's layout tokens: two measurements given the same token have the same top-level
 * names in the same order and values of the same kinds, whatever came between them (other layouts,
 * refused measurements, nested inserts started by getters); and a bucket's shape answers a measurement
 * of a remembered layout exactly as the field-by-field check does.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

import { fitsFlatShape, flatShapeOf, matchesKnownShape } from '../../src/catalog/flat-shape.js';
import type { FlatShape } from '../../src/catalog/flat-shape.js';
import { copyMeasurement, makeWalk } from '../../src/util/bson-validation.js';
import type { MeasurementLayout } from '../../src/util/bson-validation.js';
import { measurementArb, templatedStreamArb } from './measurement-arbitraries.js';

// A name with NUL and a symbol value are refused: the walk throws part way through.
const names = fc.oneof(
  { weight: 20, arbitrary: fc.constantFrom('t', 'a', 'b', 'm', '__proto__') },
  { weight: 1, arbitrary: fc.constant('x\u0000y') },
);
const value: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.double() },
  { weight: 6, arbitrary: fc.integer() },
  { weight: 2, arbitrary: fc.boolean() },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 3 }).map((t) => new Date(t)) },
  { weight: 1, arbitrary: fc.constantFrom('s', null) },
  { weight: 1, arbitrary: fc.constant({ n: 1 }) },
  { weight: 1, arbitrary: fc.constant(Symbol('refused')) },
);
const measurement = measurementArb(names, value);

/**
 * Streams that repeat layouts, as ingest does. Some measurements carry a getter that validates another
 * measurement while the walk reads it (a nested insert), which writes the positional caches under the
 * outer walk.
 */
const stream = templatedStreamArb(
  measurement,
  fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat(2) }),
  (m, nested, templates) => {
    if (nested === undefined) return m;
    const inner = templates[nested % templates.length] as Record<string, unknown>;
    Object.defineProperty(m, 'g', {
      enumerable: true,
      get: () => {
        try {
          copyMeasurement(inner, makeWalk());
        } catch {
          // A refused inner measurement is part of what the outer walk must survive.
        }
        return 1;
      },
    });
    return m;
  },
);

/** Top-level names and value kinds of a stored copy, as a comparable string. */
function layoutOf(copy: Record<string, unknown>): string {
  return JSON.stringify(
    Object.keys(copy).map((k) => {
      const v = copy[k];
      return [k, typeof v === 'number' ? 'n' : typeof v === 'boolean' ? 'b' : v instanceof Date ? 'd' : 'o'];
    }),
  );
}

describe('measurement layouts', () => {
  it('measurements given one token have one layout, and a repeated layout gets a token', () => {
    let vouched = 0;
    fc.assert(
      fc.property(stream, (ms) => {
        const seen = new Map<MeasurementLayout, string>();
        const walk = makeWalk();
        let previous: string | undefined;
        for (const m of ms) {
          let copy: Record<string, unknown>;
          try {
            copy = copyMeasurement(m, walk);
          } catch {
            previous = undefined;
            continue;
          }
          const layout = layoutOf(copy);
          const token = walk.layout;
          if (token !== undefined) {
            vouched++;
            const first = seen.get(token);
            if (first === undefined) seen.set(token, layout);
            else expect(layout).toBe(first);
          } else if (previous === layout && !hasGetter(m) && Object.keys(m).length <= 64) {
            // The same layout twice in a row, nothing between: the second is vouched for.
            throw new Error(`no token for a repeated layout ${layout}`);
          }
          previous = hasGetter(m) ? undefined : layout;
        }
      }),
      { numRuns: 300 },
    );
    expect(vouched).toBeGreaterThan(100);
  });

  it('a shape answers a remembered layout as the field-by-field check does', () => {
    let shortcuts = 0;
    fc.assert(
      fc.property(stream, (ms) => {
        let shape: FlatShape | undefined;
        const walk = makeWalk();
        for (const m of ms) {
          let copy: Record<string, unknown>;
          try {
            copy = copyMeasurement(m, walk);
          } catch {
            continue;
          }
          const item = { measurement: copy, layout: walk.layout };
          if (item.layout !== undefined && shape?.layout === item.layout) shortcuts++;
          expect(matchesKnownShape(shape, item, 'm')).toBe(fitsFlatShape(shape, copy, 'm'));
          shape ??= flatShapeOf(copy, 'm', undefined);
        }
      }),
      { numRuns: 300 },
    );
    expect(shortcuts).toBeGreaterThan(50);
  });

  it('a layout not made by the walk is never remembered', () => {
    const walk = makeWalk();
    const first = copyMeasurement({ t: new Date(0), a: 1 }, walk);
    const shape = flatShapeOf(first, 'm', undefined) as FlatShape;
    const forged = { serial: 1 } as unknown as MeasurementLayout;
    expect(matchesKnownShape(shape, { measurement: first, layout: forged }, 'm')).toBe(true);
    expect(shape.layout).toBeUndefined();
    // The forged token then vouches for nothing: a different measurement is checked field by field.
    const other = copyMeasurement({ t: new Date(0), a: 'text' }, walk);
    expect(matchesKnownShape(shape, { measurement: other, layout: forged }, 'm')).toBe(false);
  });
});

function hasGetter(m: Record<string, unknown>): boolean {
  return Object.getOwnPropertyDescriptor(m, 'g')?.get !== undefined;
}
