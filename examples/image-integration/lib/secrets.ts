// Keeping secrets in: masking the request's secret fields (for logs) and redacting any secret
// value, in the forms it travels in, from every text that leaves (responses, errors, logs).
import { schema } from './schema';

export const MASK = '******';

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  secret?: boolean;
}

/**
 * Walks a request body beside the schema and calls `hidden` for each value that must not be
 * shown: the fields the schema marks `secret`, and fields the schema does not know (a mistyped
 * `pasword` holds a password just the same).
 */
function walk(value: unknown, node: SchemaNode | undefined, hidden: (holder: Record<string, unknown>, key: string) => void): void {
  if (value === null || typeof value !== 'object' || node?.properties === undefined) return;
  const holder = value as Record<string, unknown>;
  for (const key of Object.keys(holder)) {
    const child = Object.hasOwn(node.properties, key) ? node.properties[key] : undefined;
    if (child === undefined || child.secret === true) hidden(holder, key);
    else walk(holder[key], child, hidden);
  }
}

/** A copy of the request body with every secret (and unknown) field replaced by `******`. */
export function maskSecrets(body: unknown): unknown {
  const copy = structuredClone(body);
  walk(copy, schema as SchemaNode, (holder, key) => {
    if (holder[key] !== '' && holder[key] !== null && holder[key] !== undefined) holder[key] = MASK;
  });
  return copy;
}

/** The string values of the request's secret (and unknown) fields. */
export function secretValues(body: unknown): string[] {
  const values: string[] = [];
  const collect = (value: unknown): void => {
    if (typeof value === 'string' && value !== '') values.push(value);
    else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) collect(v);
  };
  walk(body, schema as SchemaNode, (holder, key) => collect(holder[key]));
  return values;
}

// userinfo in any URL: scheme://user:password@host
const URL_USERINFO = /([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi;

/**
 * Replaces secrets in text. Each secret is also known in the forms it may come back in: JSON-escaped,
 * URL-encoded, base64, and (added by the code that sends them) the Basic credentials and tokens made
 * from it. A service account's private key is also known line by line, in case a peer quotes a part.
 */
export class Redactor {
  readonly #values = new Set<string>();
  #sorted: string[] | undefined;

  constructor(values: Iterable<string> = []) {
    for (const value of values) this.add(value);
  }

  add(value: string | undefined): this {
    if (value === undefined || value === '') return this;
    for (const form of [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), Buffer.from(value).toString('base64')]) {
      if (form !== '') this.#values.add(form);
    }
    if (value.trimStart().startsWith('{')) this.#addServiceAccount(value);
    this.#sorted = undefined;
    return this;
  }

  #addServiceAccount(json: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      return;
    }
    const { private_key: key, private_key_id: id } = (parsed ?? {}) as { private_key?: unknown; private_key_id?: unknown };
    if (typeof id === 'string' && id !== '') this.#values.add(id);
    if (typeof key === 'string') {
      this.#values.add(key);
      for (const line of key.split(/\r?\n/)) if (line.length >= 16 && !line.startsWith('-----')) this.#values.add(line);
    }
  }

  redact(text: string): string {
    this.#sorted ??= [...this.#values].sort((a, b) => b.length - a.length);
    let out = text.replace(URL_USERINFO, `$1${MASK}@`);
    for (const value of this.#sorted) if (out.includes(value)) out = out.split(value).join(MASK);
    return out;
  }

  /** A deep copy of a JSON-able value with every string redacted. */
  redactValue<T>(value: T): T {
    return JSON.parse(this.redact(JSON.stringify(value) ?? 'null')) as T;
  }
}
