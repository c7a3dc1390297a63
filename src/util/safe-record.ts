/**
 * User-keyed data (measurement field names, meta sub-fields) is untrusted: `__proto__`, `constructor`,
 * `$`-prefixed and dotted names must never reach `Object.prototype` or be mistaken for paths. These helpers
 * build objects with own data properties only (`Object.defineProperty`, never assignment), so
 * `"__proto__"` becomes an ordinary field.
 *
 * @packageDocumentation
 */

/** A plain object keyed by user-supplied field names. */
export type SafeRecord = Record<string, unknown>;

/**
 * Define `key` on `target` as an own, enumerable data property, whatever the key is.
 *
 * Plain assignment `target[key] = value` would change the prototype when `key` is `"__proto__"`.
 *
 * @param target - object to write to.
 * @param key - a field name, possibly hostile.
 * @param value - the value.
 */
export function defineField(target: object, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    (target as SafeRecord)[key] = value;
  }
}

/**
 * Read own property `key` of `source`; never reads inherited properties such as `constructor`.
 *
 * @param source - object to read.
 * @param key - a field name, possibly hostile.
 * @returns the own value, or `undefined`.
 */
export function getOwnField(source: object, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(source, key) ? (source as SafeRecord)[key] : undefined;
}

/**
 * Whether `source` has own property `key`.
 *
 * @param source - object to inspect.
 * @param key - a field name, or a row index (a number is the same key as its decimal string, and looks up
 *   an object's integer-keyed elements without building that string).
 * @returns `true` if the property is an own property.
 */
export function hasOwnField(source: object, key: string | number): boolean {
  return Object.prototype.hasOwnProperty.call(source, key);
}

/**
 * Names that JavaScript objects treat specially: an update applied by JS code (mingo) walking a dotted path
 * through them could reach `Object.prototype`.
 */
const kPrototypeNames: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Whether a field name can be used as one segment of a MongoDB dotted path in an update document:
 * not empty, no `.`, not `$`-prefixed, no NUL, and not a prototype-related name (`__proto__`,
 * `constructor`, `prototype`), which JS update engines could misroute.
 *
 * @param name - a field name.
 * @returns `true` when the name is safe inside a dotted path.
 */
export function isPathSafeFieldName(name: string): boolean {
  return (
    name.length > 0 &&
    !name.includes('.') &&
    !name.startsWith('$') &&
    !name.includes('\0') &&
    !kPrototypeNames.has(name)
  );
}
