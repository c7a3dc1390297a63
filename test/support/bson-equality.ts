/**
 * Test setup: js-bson values compare by what they encode, whichever copy of `bson` made them. The
 * `mongodb` driver decodes with its own (CommonJS) copy while this package imports the ESM one, so an
 * `ObjectId` read through the driver is not an instance of the `ObjectId` a test built; MongoDB compares
 * them as equal, and so do the tests' `toEqual`/`toStrictEqual`.
 */
import { serialize } from 'bson';
import { expect } from 'vitest';

function tagOf(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const tag = (v as { _bsontype?: unknown })._bsontype;
  return typeof tag === 'string' ? tag : undefined;
}

/** The BSON bytes of a value (js-bson's serializer reads values of any copy by their tag). */
function encoded(v: unknown): string {
  return Buffer.from(serialize({ v })).toString('hex');
}

expect.addEqualityTesters([
  function bsonValuesEqual(a: unknown, b: unknown): boolean | undefined {
    const ta = tagOf(a);
    const tb = tagOf(b);
    if (ta === undefined || tb === undefined) return undefined;
    if (ta !== tb) return false;
    // Same tag: equal when they encode to the same bytes (an ObjectId's 12 bytes, a Binary's subtype and data).
    return encoded(a) === encoded(b);
  },
]);
