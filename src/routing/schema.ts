// JSON Schema checks (ajv), compiled once at start, shared by named functions' input schemas and
// by event contracts. A check returns the violations, each a field and what is wrong with it,
// bounded in number and length: field names come from the client.
type Ajv = import('ajv').default;
type Schema = Record<string, unknown>;

export interface Violation {
  field: string;
  description: string;
}

/** Undefined when the input matches; else its violations. */
export type Check = (input: unknown) => Violation[] | undefined;

/** An ajv instance, loaded only when some schema is declared. */
export function createAjv(options: { useDefaults?: boolean } = {}): Ajv {
  const Ajv = (require('ajv') as { default: new (options: object) => Ajv }).default;
  const ajv = new Ajv({ strict: false, ...options });
  (require('ajv-formats') as { default: (ajv: Ajv) => void }).default(ajv);
  return ajv;
}

// ajv's allErrors mode makes an error object per violation: for input with a violation per item
// or per byte that is hundreds of bytes of garbage per input byte. Every input is first checked
// fail-fast; only small input (at most this many values) is checked again to list every violation.
const LIST_ALL_UP_TO = 1000;
export const MAX_VIOLATIONS = 50;

/** A schema's check; with `coerce`, query text is converted to the schema's types in place. */
export function compile(ajv: Ajv, schema: Schema, coerce: boolean): Check {
  // Coercion needs its own instance: ajv's option applies to everything it compiles.
  const instance = coerce ? withCoercion(ajv) : ajv;
  const first = instance.compile(schema);
  // ajv checks an `$async` schema in a promise: read as a verdict, it would pass every input, and its rejection be nobody's.
  if ((first as { $async?: unknown }).$async === true)
    throw new Error(
      'a schema with $async is not checked: funcrun checks input before the function runs, synchronously; check what needs a lookup in the function',
    );
  const every = allErrors(instance).compile(schema);
  return (input) => {
    if (first(input)) return undefined;
    // Coercion changes the input in place; the second pass sees what the first left.
    const errors = (countUpTo(input, LIST_ALL_UP_TO + 1) <= LIST_ALL_UP_TO && !every(input) ? every.errors : first.errors) ?? [];
    return violationsOf(errors);
  };
}

/** What ajv reports of an error: the parts read here. */
export interface SchemaError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  /** Set by ajv on an error of a `propertyNames` subschema: the key that broke it. */
  propertyName?: string;
}

/** ajv's errors as violations, at most MAX_VIOLATIONS of them. */
export function violationsOf(errors: readonly SchemaError[]): Violation[] {
  const violations: Violation[] = [];
  // A key that broke `propertyNames` is reported twice by ajv: by the subschema's error, naming
  // the rule, then by `propertyNames`' own. The first says it all.
  const badNames = new Set<string>();
  for (const e of errors) {
    if (violations.length === MAX_VIOLATIONS) break;
    if (typeof e.propertyName === 'string') badNames.add(`${e.instancePath}/${e.propertyName}`);
    else if (e.keyword === 'propertyNames' && badNames.has(`${e.instancePath}/${String(e.params.propertyName)}`)) continue;
    violations.push({ field: fieldOf(e.instancePath === '' ? '(input)' : e.instancePath.slice(1).replace(/\//g, '.')), description: describe(e) });
  }
  return violations;
}

/**
 * What is wrong, naming the key at fault where ajv knows it: ajv's own messages leave it out
 * (`must NOT have additional properties`). A key may come from the client: quoted by quoteName().
 */
function describe(e: SchemaError): string {
  const { params } = e;
  const name = (key: string) => quoteName(String(params[key]));
  if (typeof e.propertyName === 'string') return `property name ${quoteName(e.propertyName)} ${cut(e.message ?? 'is invalid')}`;
  switch (e.keyword) {
    case 'required':
      return `${name('missingProperty')} is required`;
    case 'additionalProperties':
      return `must NOT have additional property ${name('additionalProperty')}`;
    // ajv checks these two only in the 2019 and 2020 dialects (funcrun's ajv is draft-07's), worded all the same.
    case 'unevaluatedProperties':
      return `must NOT have unevaluated property ${name('unevaluatedProperty')}`;
    case 'dependentRequired':
    case 'dependencies':
      // `dependencies` with a schema (not a list of keys) reports its subschema's errors instead.
      return `${name('missingProperty')} is required when ${name('property')} is present`;
    case 'propertyNames':
      return `property name ${name('propertyName')} is invalid`;
    case 'enum':
      return `must be equal to one of ${listValues(params.allowedValues)}`;
    case 'const':
      return `must be equal to ${listValues([params.allowedValue])}`;
  }
  return cut(e.message ?? 'is invalid');
}

// Characters of a key a message quotes, at most: a key is the client's, as long as it likes (a
// 1 MB key must not make a 1 MB message or log line). A longer key is cut, and ends in '…'.
const NAME_LENGTH = 40;
// Escaped in a quoted key: the quote and backslash, control characters (C0, DEL, C1), the line and
// paragraph separators, bidi controls and invisible marks (U+200B-U+200F, U+202A-U+202E,
// U+2066-U+2069), and half a surrogate pair, so that the message is one line of well-formed text
// that reads as it is.
const ESCAPED =
  /['\\\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// The same in a field (a path of keys), but for the quote and backslash: a field is not quoted.
const UNPRINTABLE =
  /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const SHORT_ESCAPES: Record<string, string> = { "'": "\\'", '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A key in single quotes, escaped as JSON escapes a string (and `'` too), cut at NAME_LENGTH. */
export function quoteName(key: string): string {
  let shown = key;
  if (key.length > NAME_LENGTH) {
    // Never half of a surrogate pair at the cut.
    const code = key.charCodeAt(NAME_LENGTH - 1);
    shown = key.slice(0, code >= 0xd800 && code <= 0xdbff ? NAME_LENGTH - 1 : NAME_LENGTH) + '…';
  }
  return `'${shown.replace(ESCAPED, escapeOne)}'`;
}

/** One character as JSON escapes it (`\n`, `\u001b`). */
function escapeOne(c: string): string {
  return SHORT_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** A field (the path to a value, made of the sender's keys): cut at 80 characters like any echo of input, unprintable characters escaped. */
function fieldOf(path: string): string {
  return cut(path).replace(UNPRINTABLE, escapeOne);
}

// Values an enum's violation lists, at most: the schema's, but perhaps many.
const LISTED_VALUES = 10;

/** A schema's allowed values as JSON, cut to one description's length. */
function listValues(values: unknown): string {
  if (!Array.isArray(values)) return 'the allowed values';
  const shown = values.slice(0, LISTED_VALUES).map((value) => {
    try {
      return JSON.stringify(value) ?? String(value);
    } catch {
      return String(value);
    }
  });
  return cut(shown.join(', ') + (values.length > LISTED_VALUES ? ', …' : ''));
}

/** The violations in one line, as an error message lists them. */
export function listViolations(violations: Violation[]): string {
  return violations.map((v) => `${v.field} ${v.description}`).join('; ');
}

/** Text from the client, quoted cut short, like every echo of input. */
export function cut(text: string): string {
  return text.length > 80 ? text.slice(0, 80) + '…' : text;
}

/** How many values `input` holds, counting no further than `limit`. */
function countUpTo(input: unknown, limit: number): number {
  let count = 0;
  const pending = [input];
  while (pending.length > 0 && count < limit) {
    const node = pending.pop();
    count++;
    if (node === null || typeof node !== 'object') continue;
    if (ArrayBuffer.isView(node)) count += node.byteLength;
    else if (Array.isArray(node)) pending.push(...node.slice(0, limit));
    else for (const key of Object.keys(node).slice(0, limit)) pending.push((node as Record<string, unknown>)[key]);
  }
  return count;
}

const variants = new WeakMap<Ajv, Map<string, Ajv>>();
/** An instance like `ajv` with some options changed: ajv's options apply to everything it compiles. */
function variant(ajv: Ajv, name: string, options: object): Ajv {
  let byName = variants.get(ajv);
  if (byName === undefined) variants.set(ajv, (byName = new Map()));
  let instance = byName.get(name);
  if (instance === undefined) {
    const Ajv = ajv.constructor as new (options: object) => Ajv;
    instance = new Ajv({ ...ajv.opts, ...options });
    (require('ajv-formats') as { default: (ajv: Ajv) => void }).default(instance);
    byName.set(name, instance);
  }
  return instance;
}

/** Reports every violation, not only the first. */
const allErrors = (ajv: Ajv) => variant(ajv, 'all errors', { allErrors: true });
/** Query values are text: coerced to the schema's types, and a single value to a list. */
const withCoercion = (ajv: Ajv) => variant(ajv, 'coercion', { coerceTypes: 'array' });
