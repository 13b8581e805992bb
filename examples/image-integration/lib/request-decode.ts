// A request body decoded as grpc-gateway decodes it for StackRox: protojson's unmarshaler with
// DiscardUnknown. Each field by its JSON name or its proto name (a field given both ways is a
// duplicate), `null` is the field left out (but `[null]` is an error), 32-bit integers as numbers
// or strings, enums by name or number, at most one member of a oneof. Unknown fields are ignored;
// their names are kept (to point out a near-miss of a missing field) and their strings too (they
// may be secrets: the redactor must know them). On top of protojson: every string is bounded.
import type { FieldViolation } from './grpc';
import type { JsonNode } from './request-json';
import { CATEGORIES, type SchemaNode } from './schema';

/** An unknown field name as quoted in answers and logs: at most 40 characters. */
export function quoteName(name: string): string {
  return name.length <= 40 ? name : `${name.slice(0, 39)}…`;
}

export interface Decoded {
  /** The message with JSON names, nulls left out, integers as numbers, enums as names. */
  value: Record<string, unknown>;
  violations: FieldViolation[];
  /** The ignored field names, by the path of the object holding them ('' for the top). */
  ignored: Map<string, string[]>;
  /** The string values inside ignored fields, the first MAX_IGNORED_STRINGS: to be redacted from all output. */
  ignoredStrings: string[];
}

/**
 * Strings of ignored fields kept, at most. A request has some thirty fields, and a mistyped secret
 * field is one of them; at most 4,096 of these are masked (guessedSecrets, service.ts), and looking
 * at 130,000 four-character values to choose them took 100 ms.
 */
const MAX_IGNORED_STRINGS = 16_384;

const INT32_MIN = -(2n ** 31n);
const INT32_MAX = 2n ** 31n - 1n;
const JSON_NUMBER = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * The 32-bit integer a JSON number's text denotes, as protojson reads it: exponents and
 * fractions are fine when the value is integral (`1e2`, `30.0`, `150e-1`), and it must fit.
 */
export function parseInt32(text: string): number | undefined {
  const m = JSON_NUMBER.exec(text);
  if (m === null) return undefined;
  const [, sign, whole, fraction = '', exp = '0'] = m;
  // An exponent beyond a few digits cannot give an int32 (or it only multiplies 0).
  if (exp.replace(/^[+-]?0*/, '').length > 4) return /^0+$/.test(whole + fraction) ? 0 : undefined;
  let digits = (whole + fraction).replace(/^0+(?=\d)/, '');
  let scale = Number(exp) - fraction.length;
  if (scale < 0) {
    const dropped = digits.length + scale <= 0 ? digits : digits.slice(digits.length + scale);
    if (!/^0*$/.test(dropped)) return undefined; // not integral
    digits = digits.length + scale <= 0 ? '0' : digits.slice(0, digits.length + scale);
    scale = 0;
  }
  if (digits !== '0' && digits.length + scale > 11) return undefined; // far out of range
  const value = BigInt(digits) * 10n ** BigInt(digits === '0' ? 0 : scale) * (sign === '-' ? -1n : 1n);
  if (value < INT32_MIN || value > INT32_MAX) return undefined;
  return Number(value);
}

/** A google.protobuf.Timestamp string as protojson takes it: RFC 3339 with upper-case T and Z. */
function isTimestamp(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z|[+-](\d{2}):(\d{2}))$/.exec(s);
  if (m === null) return false;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  const days = new Date(Date.UTC(2000, month, 0)).getUTCDate() - (month === 2 && !(year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)) ? 1 : 0);
  const offsetOk = m[7] === undefined || (Number(m[7]) < 24 && Number(m[8]) < 60);
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= days && hour < 24 && minute < 60 && second < 60 && offsetOk;
}

const CATEGORY_TEXT = `must be one of ${CATEGORIES.join(', ')} (or 0, 1, 2)`;

function describe(node: JsonNode): string {
  switch (node.kind) {
    case 'number':
      return 'a number';
    case 'string':
      return 'a string';
    case 'bool':
      return node.value ? 'true' : 'false';
    case 'array':
      return 'a list';
    case 'object':
      return 'an object';
    default:
      return 'null';
  }
}

/** Decodes `root` as the message `schema`; `at` prefixes every field path (e.g. 'config'). */
export function decodeMessage(root: JsonNode, schema: SchemaNode): Decoded {
  const violations: FieldViolation[] = [];
  const ignored = new Map<string, string[]>();
  const ignoredStrings: string[] = [];
  const add = (field: string, description: string) => violations.push({ field: field || '(body)', description });
  const join = (path: string, name: string) => (path ? `${path}.${name}` : name);

  // Every string in an ignored value (the first MAX_IGNORED_STRINGS): it may be a secret. (Names are shown, cut to 40 characters.)
  const collect = (node: JsonNode): void => {
    if (ignoredStrings.length >= MAX_IGNORED_STRINGS) return;
    if (node.kind === 'string') ignoredStrings.push(node.value);
    else if (node.kind === 'array') node.items.forEach(collect);
    else if (node.kind === 'object') {
      for (const [, value] of node.entries) collect(value);
    }
  };

  const message = (node: JsonNode, message: SchemaNode, path: string): Record<string, unknown> | undefined => {
    if (node.kind !== 'object') {
      add(path, `must be an object, not ${describe(node)}`);
      return undefined;
    }
    const properties = message.properties ?? {};
    const byProtoName = new Map(Object.entries(message.protoNames ?? {}).map(([json, proto]) => [proto, json]));
    const out: Record<string, unknown> = {};
    const seen = new Map<string, string>(); // JSON name to the key it was given as
    let oneofSet: string | undefined;
    for (const [key, value] of node.entries) {
      if (key === '__proto__') {
        // protojson would ignore it; here it is refused, so no code ever meets such a key.
        add(join(path, key), 'a key named __proto__ is not accepted');
        continue;
      }
      const name = Object.hasOwn(properties, key) ? key : byProtoName.get(key);
      if (name === undefined) {
        const list = ignored.get(path) ?? [];
        list.push(key);
        ignored.set(path, list);
        collect(value);
        continue;
      }
      const field = join(path, name);
      // Duplicates by field, as protojson checks by field number: `clusterId` and `cluster_id` collide.
      const before = seen.get(name);
      if (before !== undefined) {
        add(field, before === key ? `duplicate field "${key}"` : `duplicate field: given as "${before}" and as "${key}"`);
        continue;
      }
      seen.set(name, key);
      if (value.kind === 'null') continue; // null is the field left out
      if (message.oneof?.includes(name)) {
        if (oneofSet !== undefined) {
          add(field, `only one configuration may be set, and ${oneofSet} already is`);
          continue;
        }
        oneofSet = name;
      }
      const decoded = fieldValue(value, properties[name], field);
      if (decoded !== undefined) out[name] = decoded;
    }
    return out;
  };

  const fieldValue = (node: JsonNode, field: SchemaNode, path: string): unknown => {
    switch (field.type) {
      case 'object':
        return message(node, field, path);
      case 'string': {
        if (node.kind !== 'string') return add(path, `must be a string, not ${describe(node)}`);
        if (field.maxLength !== undefined && node.value.length > field.maxLength) {
          return add(path, `must be at most ${field.maxLength} characters long, got ${node.value.length}`);
        }
        if (field.format === 'date-time' && !isTimestamp(node.value)) {
          return add(path, 'must be an RFC 3339 timestamp such as 2030-01-01T00:00:00Z');
        }
        return node.value;
      }
      case 'boolean':
        if (node.kind !== 'bool') return add(path, `must be true or false, not ${describe(node)}`);
        return node.value;
      case 'integer': {
        const n = node.kind === 'number' ? parseInt32(node.text) : node.kind === 'string' && node.value.length <= 64 ? parseInt32(node.value) : undefined;
        if (n === undefined) return add(path, 'must be a 32-bit integer (-2147483648 to 2147483647), as a number or a string such as "30"');
        return n;
      }
      case 'array': {
        if (node.kind !== 'array') return add(path, `must be a list, not ${describe(node)}`);
        if (field.maxItems !== undefined && node.items.length > field.maxItems) {
          return add(path, `must have at most ${field.maxItems} items, got ${node.items.length}`);
        }
        const values: string[] = [];
        const before = violations.length;
        node.items.forEach((item, i) => {
          const at = `${path}[${i}]`;
          if (item.kind === 'null') return add(at, 'null is not allowed in a list');
          const names = field.items?.enum ?? [];
          if (item.kind === 'string' && names.includes(item.value)) return values.push(item.value);
          const number = item.kind === 'number' ? parseInt32(item.text) : undefined;
          if (number !== undefined && number >= 0 && number < names.length) return values.push(names[number]);
          add(at, CATEGORY_TEXT);
        });
        // A list with a bad item is left out whole, so later checks never see shifted indices.
        return violations.length === before ? values : undefined;
      }
    }
  };

  const value = message(root, schema, '') ?? {};
  return { value, violations, ignored, ignoredStrings };
}

/**
 * Edit distance (Levenshtein) of two names when it is at most `max`, else `max + 1`; one band
 * of width 2·max+1, so at most 64 × 5 cells for the names it is given.
 */
export function boundedDistance(a: string, b: string, max = 2): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const inf = max + 1;
  let prev = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j <= max ? j : inf;
  for (let i = 1; i <= a.length; i++) {
    const row = new Array<number>(b.length + 1).fill(inf);
    if (i <= max) row[0] = i;
    let best = row[0];
    for (let j = Math.max(1, i - max); j <= Math.min(b.length, i + max); j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      row[j] = Math.min(inf, prev[j - 1] + cost, prev[j] + 1, row[j - 1] + 1);
      best = Math.min(best, row[j]);
    }
    if (best > max) return inf;
    prev = row;
  }
  return prev[b.length];
}

/**
 * The ignored names that are near-misses of `wanted` (any of its names): edit distance at most 2,
 * names of at most 64 characters, the first 32 ignored names looked at, at most 3 returned.
 */
export function nearMisses(ignored: string[] | undefined, wanted: string[]): string[] {
  if (ignored === undefined) return [];
  const found: string[] = [];
  for (const name of ignored.slice(0, 32)) {
    if (name.length > 64) continue;
    if (wanted.some((w) => boundedDistance(name, w) <= 2)) found.push(name);
    if (found.length === 3) break;
  }
  return found;
}
