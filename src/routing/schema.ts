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
export function createAjv(): Ajv {
  const Ajv = (require('ajv') as { default: new (options: object) => Ajv }).default;
  const ajv = new Ajv({ strict: false });
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
  const every = allErrors(instance).compile(schema);
  return (input) => {
    if (first(input)) return undefined;
    // Coercion changes the input in place; the second pass sees what the first left.
    const errors = (countUpTo(input, LIST_ALL_UP_TO + 1) <= LIST_ALL_UP_TO && !every(input) ? every.errors : first.errors) ?? [];
    return errors.slice(0, MAX_VIOLATIONS).map((e) => ({
      field: cut(e.instancePath === '' ? '(input)' : e.instancePath.slice(1).replace(/\//g, '.')),
      description: cut(e.keyword === 'required' ? `'${(e.params as { missingProperty: string }).missingProperty}' is required` : (e.message ?? 'is invalid')),
    }));
  };
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
