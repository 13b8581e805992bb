// The request's own secrets, read beside the schema: a copy of the body to log with every secret
// (and unknown) field masked, and the values the Redactor is to know, from the fields the schema
// marks `secret`, unknown fields, endpoints' userinfo and secret-named fields of JSON held in
// strings. Apart from the Redactor because it reads the request, not what leaves.
import { schema } from '../schema';
import { MASK } from './mask';
import { endpointSecrets, maskEndpoint } from './userinfo';

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  secret?: boolean;
}

type Holder = Record<string, unknown>;

interface Visitor {
  /** A value that must not be shown: a `secret` field, an unknown field, or a value where an object belongs. */
  hidden(holder: Holder, key: string, node: SchemaNode | undefined): void;
  /** An endpoint field (`endpoint`, `grpcEndpoint`, ...): it may carry userinfo. */
  endpoint(holder: Holder, key: string): void;
}

const isEndpointField = (key: string) => key.length >= 8 && key.slice(-8).toLowerCase() === 'endpoint';

/**
 * Walks a request body beside the schema and calls `hidden` for each value that must not be
 * shown: the fields the schema marks `secret`, fields the schema does not know (a mistyped
 * `pasword` holds a password just the same), and anything but an object where the schema has an
 * object (`"docker": "{\"password\": ...}"`, a configuration sent as a JSON string).
 */
function walk(value: unknown, node: SchemaNode | undefined, visitor: Visitor): void {
  if (value === null || typeof value !== 'object' || node?.properties === undefined) return;
  const holder = value as Holder;
  for (const key of Object.keys(holder)) {
    const child = Object.hasOwn(node.properties, key) ? node.properties[key] : undefined;
    const v = holder[key];
    if (child === undefined || child.secret === true) visitor.hidden(holder, key, child);
    else if (child.properties !== undefined && v !== null && v !== undefined && typeof v !== 'object') visitor.hidden(holder, key, child);
    else if (typeof v === 'string' && isEndpointField(key)) visitor.endpoint(holder, key);
    else walk(v, child, visitor);
  }
}

/** A copy of the request body with every secret (and unknown) field replaced by `******`, and userinfo in endpoints masked. */
export function maskSecrets(body: unknown): unknown {
  const copy = structuredClone(body);
  walk(copy, schema as SchemaNode, {
    hidden(holder, key) {
      if (holder[key] !== '' && holder[key] !== null && holder[key] !== undefined) holder[key] = MASK;
    },
    endpoint(holder, key) {
      holder[key] = maskEndpoint(holder[key] as string);
    },
  });
  return copy;
}

// Bounds on reading JSON out of strings: the size of one string, how deep strings nest in strings,
// and how many characters are parsed in all (so a request cannot make this quadratic).
const MAX_JSON_STRING = 256 * 1024;
const MAX_JSON_NESTING = 3;
const MAX_JSON_BUDGET = 4 * 1024 * 1024;

/** Field names that hold secrets whatever object they are in (inside a JSON string, say). */
const SECRET_NAME = /pass|pwd|secret|token|key|serviceaccount|private|session|signature|bearer|cookie|^auths?$|^authorization$|credential/i;

/** The string values of the request's secret (and unknown) fields, userinfo in its endpoints, and secret-named fields of JSON held in strings. */
export function secretValues(body: unknown): string[] {
  // The declared secret fields first: the Redactor knows the first secrets in more forms (Redactor.add).
  const declared: string[] = [];
  const values: string[] = [];
  let budget = MAX_JSON_BUDGET;
  const parseJson = (text: string): unknown => {
    const trimmed = text.trim();
    const first = trimmed.charCodeAt(0);
    if (first !== 0x7b && first !== 0x5b) return undefined; // { [
    if (trimmed.length > MAX_JSON_STRING || trimmed.length > budget) return undefined;
    budget -= trimmed.length;
    try {
      return JSON.parse(trimmed);
    } catch {
      return undefined;
    }
  };
  // Every string (and number, boolean) under `value`; JSON held in those strings is read too.
  const all = (value: unknown, nesting: number): void => {
    const stack = [value];
    while (stack.length > 0) {
      const v = stack.pop();
      if (typeof v === 'string') {
        if (v !== '') values.push(v);
        if (nesting < MAX_JSON_NESTING) named(parseJson(v), nesting + 1);
      } else if (typeof v === 'number' || typeof v === 'boolean') values.push(String(v));
      else if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push(child);
    }
  };
  // The secret-named fields anywhere under `value`, and JSON held in its strings.
  const named = (value: unknown, nesting: number): void => {
    const stack = [value];
    while (stack.length > 0) {
      const v = stack.pop();
      if (typeof v === 'string') {
        if (nesting < MAX_JSON_NESTING) named(parseJson(v), nesting + 1);
      } else if (Array.isArray(v)) for (const child of v) stack.push(child);
      else if (v !== null && typeof v === 'object') {
        for (const [key, child] of Object.entries(v)) {
          if (SECRET_NAME.test(key)) all(child, nesting);
          else stack.push(child);
        }
      }
    }
  };
  const visitor = (nesting: number): Visitor => ({
    hidden(holder, key, node) {
      const v = holder[key];
      const parsed = node?.properties !== undefined && typeof v === 'string' && nesting < MAX_JSON_NESTING ? parseJson(v) : undefined;
      // A configuration sent as a JSON string: its fields as the schema sees them.
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
        walk(parsed, node, visitor(nesting + 1));
        named(parsed, nesting + 1);
      } else if (node?.secret === true && typeof v === 'string') {
        if (v !== '') declared.push(v);
        if (nesting < MAX_JSON_NESTING) named(parseJson(v), nesting + 1);
      } else all(v, nesting);
    },
    endpoint(holder, key) {
      values.push(...endpointSecrets(holder[key] as string));
    },
  });
  walk(body, schema as SchemaNode, visitor(0));
  // JSON held in any string of the request (a name, a category, a field of the wrong type).
  const stack = [body];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') named(parseJson(v), 1);
    else if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push(child);
  }
  return [...new Set([...declared, ...values])];
}
