/**
 * MongoDB's `$jsonSchema` query operator (`matcher/schema/json_schema_parser.cpp`): JSON Schema draft 4
 * with MongoDB's `bsonType`, compiled once into a predicate over BSON values. mingo evaluates
 * `$jsonSchema` only through a validator it is given; this is that validator.
 *
 * Keywords: `bsonType`, `type` (JSON types; `integer` is refused as by MongoDB), `enum`, `required`,
 * `properties`, `additionalProperties`, `patternProperties`, `minProperties`, `maxProperties`,
 * `dependencies`, `items`, `additionalItems`, `minItems`, `maxItems`, `uniqueItems`, `minimum`, `maximum`,
 * `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `minLength`, `maxLength`, `pattern`, `allOf`,
 * `anyOf`, `oneOf`, `not`, and the annotations `title`, `description`. As in MongoDB, a keyword about one
 * type (`minimum`, `minLength`, `properties`...) holds for values of other types. An unknown keyword or a
 * malformed one is refused with `FailedToParse`.
 *
 * @packageDocumentation
 */
import { TimeseriesError } from '../errors.js';
import {
  BSON_TYPE_ALIASES,
  BsonType,
  bsonNumberValue,
  bsonTypeOf,
  compareBsonValues,
  isPlainObject,
} from './bson-value.js';
import { hasOwnField } from './safe-record.js';

/** A compiled schema: whether a value satisfies it. */
export type SchemaPredicate = (value: unknown) => boolean;

const kJsonTypes: Readonly<Record<string, ReadonlyArray<number>>> = {
  object: [BsonType.object],
  array: [BsonType.array],
  number: [BsonType.double, BsonType.int, BsonType.long, BsonType.decimal],
  boolean: [BsonType.bool],
  string: [BsonType.string],
  null: [BsonType.null],
};

function parseError(message: string): TimeseriesError {
  return new TimeseriesError('FailedToParse', message);
}

function typeOf(value: unknown): number {
  try {
    return bsonTypeOf(value);
  } catch {
    return -1;
  }
}

function typeSet(
  keyword: string,
  spec: unknown,
  table: Readonly<Record<string, ReadonlyArray<number>>>,
): Set<number> {
  const names = Array.isArray(spec) ? (spec as unknown[]) : [spec];
  if (names.length === 0) throw parseError(`$jsonSchema keyword '${keyword}' must name at least one type`);
  const out = new Set<number>();
  for (const name of names) {
    const types = typeof name === 'string' && hasOwnField(table, name) ? table[name] : undefined;
    if (types === undefined) throw parseError(`Unknown type name alias: ${String(name)}`);
    for (const t of types) out.add(t);
  }
  return out;
}

function nonNegativeInteger(keyword: string, spec: unknown): number {
  const n = bsonNumberValue(spec);
  if (n === undefined || !Number.isInteger(n) || n < 0) {
    throw parseError(`$jsonSchema keyword '${keyword}' must be a non-negative integer`);
  }
  return n;
}

function numberSpec(keyword: string, spec: unknown): number {
  const n = bsonNumberValue(spec);
  if (n === undefined) throw parseError(`$jsonSchema keyword '${keyword}' must be a number`);
  return n;
}

function booleanSpec(keyword: string, spec: unknown): boolean {
  if (typeof spec !== 'boolean') throw parseError(`$jsonSchema keyword '${keyword}' must be a boolean`);
  return spec;
}

function schemaSpec(keyword: string, spec: unknown): Readonly<Record<string, unknown>> {
  if (!isPlainObject(spec)) throw parseError(`$jsonSchema keyword '${keyword}' must be an object`);
  return spec;
}

function schemaList(keyword: string, spec: unknown): SchemaPredicate[] {
  if (!Array.isArray(spec) || spec.length === 0) {
    throw parseError(`$jsonSchema keyword '${keyword}' must be a nonempty array`);
  }
  return (spec as unknown[]).map((s) => compileJsonSchema(schemaSpec(keyword, s)));
}

function isNumber(value: unknown): boolean {
  const t = typeOf(value);
  return t === BsonType.double || t === BsonType.int || t === BsonType.long || t === BsonType.decimal;
}

function ownKeys(doc: Readonly<Record<string, unknown>>): string[] {
  return Object.keys(doc);
}

/**
 * Compile a `$jsonSchema` document.
 *
 * @param schema - the schema.
 * @returns a predicate over values (a document at the top level).
 * @throws {@link TimeseriesError} `FailedToParse` for an unknown or malformed keyword.
 * @example
 * ```ts
 * compileJsonSchema({ required: ['sensor'], properties: { sensor: { bsonType: 'string' } } })({ sensor: 'a' }); // true
 * ```
 */
export function compileJsonSchema(schema: Readonly<Record<string, unknown>>): SchemaPredicate {
  const checks: SchemaPredicate[] = [];
  const exclusiveMinimum = hasOwnField(schema, 'exclusiveMinimum')
    ? booleanSpec('exclusiveMinimum', schema.exclusiveMinimum)
    : false;
  const exclusiveMaximum = hasOwnField(schema, 'exclusiveMaximum')
    ? booleanSpec('exclusiveMaximum', schema.exclusiveMaximum)
    : false;
  for (const keyword of ownKeys(schema)) {
    const spec = schema[keyword];
    switch (keyword) {
      case 'title':
      case 'description':
        if (typeof spec !== 'string') throw parseError(`$jsonSchema keyword '${keyword}' must be a string`);
        break;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        break;
      case 'bsonType':
      case 'type': {
        if (keyword === 'type' && (spec === 'integer' || (Array.isArray(spec) && spec.includes('integer')))) {
          throw parseError("$jsonSchema type 'integer' is not currently supported.");
        }
        const types = typeSet(keyword, spec, keyword === 'type' ? kJsonTypes : BSON_TYPE_ALIASES);
        checks.push((v) => types.has(typeOf(v)));
        break;
      }
      case 'enum': {
        if (!Array.isArray(spec) || spec.length === 0)
          throw parseError("$jsonSchema keyword 'enum' must be a nonempty array");
        const values = spec as unknown[];
        checks.push((v) =>
          values.some((e) => typeOf(e) !== -1 && typeOf(v) !== -1 && compareBsonValues(v, e) === 0),
        );
        break;
      }
      case 'required': {
        if (!Array.isArray(spec) || spec.length === 0 || !spec.every((s) => typeof s === 'string')) {
          throw parseError("$jsonSchema keyword 'required' must be a nonempty array of strings");
        }
        const names = spec;
        checks.push((v) => !isPlainObject(v) || names.every((n) => hasOwnField(v, n) && v[n] !== undefined));
        break;
      }
      case 'properties': {
        const props = schemaSpec(keyword, spec);
        const compiled = ownKeys(props).map(
          (name) => [name, compileJsonSchema(schemaSpec(name, props[name]))] as const,
        );
        checks.push(
          (v) =>
            !isPlainObject(v) ||
            compiled.every(
              ([name, check]) => !hasOwnField(v, name) || v[name] === undefined || check(v[name]),
            ),
        );
        break;
      }
      case 'patternProperties':
      case 'additionalProperties':
        // Evaluated together below: additionalProperties depends on properties and patternProperties.
        break;
      case 'minProperties':
      case 'maxProperties': {
        const bound = nonNegativeInteger(keyword, spec);
        const min = keyword === 'minProperties';
        checks.push(
          (v) => !isPlainObject(v) || (min ? ownKeys(v).length >= bound : ownKeys(v).length <= bound),
        );
        break;
      }
      case 'dependencies': {
        const deps = schemaSpec(keyword, spec);
        const compiled = ownKeys(deps).map((name) => {
          const dep = deps[name];
          if (Array.isArray(dep)) {
            const names = dep as unknown[];
            if (!names.every((n) => typeof n === 'string'))
              throw parseError("$jsonSchema 'dependencies' arrays must hold strings");
            return [
              name,
              (v: Readonly<Record<string, unknown>>) => names.every((n) => hasOwnField(v, n)),
            ] as const;
          }
          const check = compileJsonSchema(schemaSpec(name, dep));
          return [name, (v: Readonly<Record<string, unknown>>) => check(v)] as const;
        });
        checks.push(
          (v) => !isPlainObject(v) || compiled.every(([name, check]) => !hasOwnField(v, name) || check(v)),
        );
        break;
      }
      case 'items': {
        if (Array.isArray(spec)) {
          const tuple = (spec as unknown[]).map((s) => compileJsonSchema(schemaSpec(keyword, s)));
          const additional = hasOwnField(schema, 'additionalItems')
            ? additionalItems(schema.additionalItems)
            : undefined;
          checks.push((v) => {
            if (!Array.isArray(v)) return true;
            for (let i = 0; i < v.length; i++) {
              const check = i < tuple.length ? tuple[i] : additional;
              if (check !== undefined && !check(v[i] ?? null)) return false;
            }
            return true;
          });
        } else {
          const check = compileJsonSchema(schemaSpec(keyword, spec));
          checks.push((v) => !Array.isArray(v) || (v as unknown[]).every((e) => check(e ?? null)));
        }
        break;
      }
      case 'additionalItems':
        additionalItems(spec);
        break;
      case 'minItems':
      case 'maxItems': {
        const bound = nonNegativeInteger(keyword, spec);
        const min = keyword === 'minItems';
        checks.push((v) => !Array.isArray(v) || (min ? v.length >= bound : v.length <= bound));
        break;
      }
      case 'uniqueItems': {
        if (booleanSpec(keyword, spec)) {
          checks.push(
            (v) =>
              !Array.isArray(v) ||
              (v as unknown[]).every((a, i) =>
                (v as unknown[]).every((b, j) => j <= i || compareBsonValues(a ?? null, b ?? null) !== 0),
              ),
          );
        }
        break;
      }
      case 'minimum':
      case 'maximum': {
        const bound = numberSpec(keyword, spec);
        const min = keyword === 'minimum';
        const exclusive = min ? exclusiveMinimum : exclusiveMaximum;
        checks.push((v) => {
          if (!isNumber(v)) return true;
          const c = compareBsonValues(v, bound);
          return min ? (exclusive ? c > 0 : c >= 0) : exclusive ? c < 0 : c <= 0;
        });
        break;
      }
      case 'multipleOf': {
        const divisor = numberSpec(keyword, spec);
        if (!(divisor > 0)) throw parseError("$jsonSchema keyword 'multipleOf' must be a positive number");
        checks.push((v) => !isNumber(v) || (bsonNumberValue(v) as number) % divisor === 0);
        break;
      }
      case 'minLength':
      case 'maxLength': {
        const bound = nonNegativeInteger(keyword, spec);
        const min = keyword === 'minLength';
        // Lengths count code points, as the server does (UTF-8 characters).
        checks.push((v) => {
          if (typeof v !== 'string') return true;
          const n = codePointLength(v);
          return min ? n >= bound : n <= bound;
        });
        break;
      }
      case 'pattern': {
        if (typeof spec !== 'string') throw parseError("$jsonSchema keyword 'pattern' must be a string");
        let regex: RegExp;
        try {
          regex = new RegExp(spec, 'u');
        } catch (cause) {
          throw new TimeseriesError(
            'FailedToParse',
            `$jsonSchema keyword 'pattern' is not a valid regex: ${spec}`,
            { cause },
          );
        }
        checks.push((v) => typeof v !== 'string' || regex.test(v));
        break;
      }
      case 'allOf': {
        const list = schemaList(keyword, spec);
        checks.push((v) => list.every((check) => check(v)));
        break;
      }
      case 'anyOf': {
        const list = schemaList(keyword, spec);
        checks.push((v) => list.some((check) => check(v)));
        break;
      }
      case 'oneOf': {
        const list = schemaList(keyword, spec);
        checks.push((v) => list.filter((check) => check(v)).length === 1);
        break;
      }
      case 'not': {
        const check = compileJsonSchema(schemaSpec(keyword, spec));
        checks.push((v) => !check(v));
        break;
      }
      default:
        throw parseError(`Unknown $jsonSchema keyword: ${keyword}`);
    }
  }
  const extra = propertyRules(schema);
  if (extra !== undefined) checks.push(extra);
  return (value) => checks.every((check) => check(value));
}

/** The number of code points of `s` (a surrogate pair is one). */
function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n--;
      i++;
    }
  }
  return n;
}

function additionalItems(spec: unknown): SchemaPredicate {
  if (typeof spec === 'boolean') return () => spec;
  return compileJsonSchema(schemaSpec('additionalItems', spec));
}

/** `patternProperties` and `additionalProperties`, which apply to the names `properties` does not list. */
function propertyRules(schema: Readonly<Record<string, unknown>>): SchemaPredicate | undefined {
  const hasPatterns = hasOwnField(schema, 'patternProperties');
  const hasAdditional = hasOwnField(schema, 'additionalProperties');
  if (!hasPatterns && !hasAdditional) return undefined;
  const listed = new Set(
    hasOwnField(schema, 'properties') ? ownKeys(schemaSpec('properties', schema.properties)) : [],
  );
  const patternSpec = hasPatterns ? schemaSpec('patternProperties', schema.patternProperties) : {};
  const patterns = ownKeys(patternSpec).map((source) => {
    let regex: RegExp;
    try {
      regex = new RegExp(source, 'u');
    } catch (cause) {
      throw new TimeseriesError(
        'FailedToParse',
        `$jsonSchema patternProperties has an invalid regex: ${source}`,
        { cause },
      );
    }
    return [regex, compileJsonSchema(schemaSpec(source, patternSpec[source]))] as const;
  });
  const additionalSpec = schema.additionalProperties;
  const additional: SchemaPredicate | undefined = !hasAdditional
    ? undefined
    : typeof additionalSpec === 'boolean'
      ? () => additionalSpec
      : compileJsonSchema(schemaSpec('additionalProperties', additionalSpec));
  return (v) => {
    if (!isPlainObject(v)) return true;
    for (const name of ownKeys(v)) {
      const value = v[name];
      let matched = listed.has(name);
      for (const [regex, check] of patterns) {
        if (!regex.test(name)) continue;
        matched = true;
        if (!check(value)) return false;
      }
      if (!matched && additional !== undefined && !additional(value)) return false;
    }
    return true;
  };
}

/**
 * The validator handed to mingo's `jsonSchemaValidator` option.
 *
 * @param schema - the `$jsonSchema` document.
 * @returns a predicate over documents.
 * @throws {@link TimeseriesError} `FailedToParse` for a schema MongoDB refuses.
 */
export function jsonSchemaValidator(schema: Readonly<Record<string, unknown>>): (doc: unknown) => boolean {
  return compileJsonSchema(schema);
}
