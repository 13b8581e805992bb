// Event contracts: the module's `events.types` declares, per CloudEvent type, the schema of the
// event's data, as a JSON Schema (checked with ajv) or any Standard Schema validator (Zod,
// Valibot, ArkType: `schema['~standard'].validate`). Compiled once at start; an event whose data
// does not match is refused with every violation named, and never reaches the function.
import type { CloudEvent } from 'cloudevents';
import { runtimeError } from '../errors';
import { compile, createAjv, cut, listViolations, MAX_VIOLATIONS, type Check, type Violation } from '../routing/schema';
import { isThenable } from '../lifecycle/deadline';
import { kindOf } from '../util/kind';

/** The Standard Schema interface, as much of it as is read here. */
interface StandardSchema {
  '~standard': {
    version: 1;
    validate(value: unknown): StandardResult | Promise<StandardResult>;
  };
}
type StandardResult = { value: unknown; issues?: undefined } | { issues: readonly { message: string; path?: readonly unknown[] }[] };

/** One declared type's check: the data the function gets (a validator's output), or the violations. */
type TypeCheck = (data: unknown) => Checked | Promise<Checked>;
type Checked = { data: unknown } | { violations: Violation[] };

export interface Contracts {
  /**
   * The events as the function gets them: each checked against its type's schema, with the data a
   * validator gave back. Throws (or rejects with) a 400 naming the event and its violations.
   */
  check(
    events: CloudEvent<unknown> | CloudEvent<unknown>[],
  ): CloudEvent<unknown> | CloudEvent<unknown>[] | Promise<CloudEvent<unknown> | CloudEvent<unknown>[]>;
}

// Types listed in an undeclared type's error, at most: the module's own, but perhaps many.
const LISTED_TYPES = 10;

function isStandardSchema(value: unknown): value is StandardSchema {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  const standard = (value as { '~standard'?: { validate?: unknown; version?: unknown } })['~standard'];
  return standard !== null && typeof standard === 'object' && standard.version === 1 && typeof standard.validate === 'function';
}

/** Checks the `events` export once at start; throws naming what is wrong. */
export function checkEventDeclaration(events: unknown, fail: (message: string) => never): void {
  if (events === null || typeof events !== 'object') fail(`'events' must be an object: { types, passthrough, idempotency }`);
  const { types, passthrough, idempotency } = events as Record<string, unknown>;
  for (const key of Object.keys(events as object)) {
    if (!['types', 'passthrough', 'idempotency'].includes(key)) fail(`events.${key} is not an option: expected types, passthrough or idempotency`);
  }
  if (types !== undefined) {
    if (types === null || typeof types !== 'object') fail(`events.types must be an object of CloudEvent type to schema`);
    for (const [type, schema] of Object.entries(types as object)) {
      if (type === '') fail(`events.types: a CloudEvent type is not empty`);
      if (!isStandardSchema(schema) && (schema === null || typeof schema !== 'object'))
        fail(`events.types['${type}'] must be a JSON Schema object or a Standard Schema validator (Zod, Valibot, ArkType)`);
    }
  }
  if (passthrough !== undefined && typeof passthrough !== 'boolean') fail(`events.passthrough must be true or false`);
  if (idempotency !== undefined && typeof idempotency !== 'boolean') {
    const key = idempotency === null || typeof idempotency !== 'object' ? null : (idempotency as { key?: unknown }).key;
    if (key === null || (key !== undefined && typeof key !== 'function')) fail(`events.idempotency must be true, false or { key(event) { ... } }`);
  }
}

/** The contracts' check, or undefined when the module declares no types. */
export function compileContracts(types: Record<string, unknown> | undefined, passthrough: boolean): Contracts | undefined {
  if (types === undefined) return undefined;
  const declared = Object.keys(types);
  const jsonSchemas = declared.some((type) => !isStandardSchema(types[type]));
  // A JSON Schema's `default`s fill in what the event's data leaves out, as a Standard Schema's output would.
  const ajv = jsonSchemas ? createAjv({ useDefaults: true }) : undefined;
  const checks = new Map<string, TypeCheck>();
  for (const type of declared) {
    const schema = types[type];
    checks.set(type, isStandardSchema(schema) ? standardCheck(schema) : jsonCheck(compile(ajv!, schema as Record<string, unknown>, false)));
  }
  const listed = declared.slice(0, LISTED_TYPES).join(', ') + (declared.length > LISTED_TYPES ? ', …' : '');

  function checkOne(event: CloudEvent<unknown>, index: number | undefined): CloudEvent<unknown> | Promise<CloudEvent<unknown>> {
    const check = checks.get(event.type);
    if (check === undefined) {
      if (passthrough) return event;
      throw runtimeError('FUNCRUN_UNDECLARED_EVENT_TYPE', `event type '${cut(event.type)}' is not declared: this function takes ${listed}`, {
        details: { type: cut(event.type), ...(index === undefined ? {} : { index }) },
      });
    }
    const checked = check(event.data);
    return isThenable(checked) ? Promise.resolve(checked).then((c) => outcome(event, c, index)) : outcome(event, checked, index);
  }

  return {
    check(events) {
      if (!Array.isArray(events)) return checkOne(events, undefined);
      const checked = events.map((event, index) => checkOne(event, index));
      if (checked.some(isThenable)) return Promise.all(checked).then((all) => sameOr(events, all));
      return sameOr(events, checked as CloudEvent<unknown>[]);
    },
  };
}

// The batch as it came, when no event in it changed: the request's input stays what it was.
function sameOr(events: CloudEvent<unknown>[], checked: CloudEvent<unknown>[]): CloudEvent<unknown>[] {
  return checked.every((event, i) => event === events[i]) ? events : checked;
}

function outcome(event: CloudEvent<unknown>, checked: Checked, index: number | undefined): CloudEvent<unknown> {
  if ('violations' in checked) {
    const { violations } = checked;
    throw runtimeError('FUNCRUN_INVALID_EVENT_DATA', `invalid data for event type '${cut(event.type)}': ${listViolations(violations)}`, {
      details: { type: cut(event.type), ...(index === undefined ? {} : { index }), violations },
    });
  }
  // A validator may give back other data (defaults, conversions): the function gets that.
  return checked.data === event.data ? event : event.cloneWith({ data: checked.data }, false);
}

// A JSON Schema describes JSON values: bytes (data of a binary content type) are refused.
function jsonCheck(check: Check): TypeCheck {
  return (data) => {
    if (ArrayBuffer.isView(data)) return { violations: [{ field: '(data)', description: 'is bytes, not JSON' }] };
    const violations = check(data);
    return violations === undefined ? { data } : { violations: violations.map(asData) };
  };
}

// The schema describes the data: its root is `(data)`, not the `(input)` of a named function.
function asData(v: Violation): Violation {
  return v.field === '(input)' ? { field: '(data)', description: v.description } : v;
}

function standardCheck(schema: StandardSchema): TypeCheck {
  const validate = schema['~standard'].validate.bind(schema['~standard']);
  const read = (result: StandardResult): Checked => {
    // The validator is the module's: a result that is not one is its failure (500), not the sender's.
    if (result === null || typeof result !== 'object') throw new TypeError(`a Standard Schema validator returned ${kindOf(result)}, not a result`);
    if (result.issues === undefined) return { data: result.value };
    if (!Array.isArray(result.issues)) throw new TypeError(`a Standard Schema validator returned issues as ${kindOf(result.issues)}, not a list`);
    const violations = result.issues.slice(0, MAX_VIOLATIONS).map((issue: unknown) => ({
      field: cut(pathOf((issue as { path?: readonly unknown[] } | null)?.path)),
      description: cut(String((issue as { message?: unknown } | null)?.message ?? 'is invalid')),
    }));
    return { violations: violations.length > 0 ? violations : [{ field: '(data)', description: 'is invalid' }] };
  };
  return (data) => {
    const result = validate(data);
    return isThenable(result) ? Promise.resolve(result).then(read) : read(result);
  };
}

/** A Standard Schema issue's path (keys, or `{ key }` segments) as `a.b.0`. */
function pathOf(path: readonly unknown[] | undefined): string {
  if (!Array.isArray(path) || path.length === 0) return '(data)';
  return path
    .slice(0, 32)
    .map((segment) => String(segment !== null && typeof segment === 'object' ? (segment as { key?: unknown }).key : segment))
    .join('.');
}
