// Headers a function hands over (on a returned response or a thrown error) made safe to send:
// funcrun owns the framing, and a name or value node would refuse is dropped rather than
// allowed to throw in the middle of writing a response.
import { validateHeaderName, validateHeaderValue, type OutgoingHttpHeaders } from 'node:http';

// Framing and connection management belong to the runtime: a function's own Content-Length or
// Transfer-Encoding beside funcrun's would make the response ambiguous (RFC 9112 section 6.3).
// Compared name by name, not looked up in a Set: a switch compares lengths first, and a name that
// is a property key (a light Response's) is compared by identity, without hashing it.
/** Whether a (lowercase) header name is one of the framing headers funcrun writes itself. */
export function isFraming(name: string): boolean {
  switch (name) {
    case 'content-length':
    case 'transfer-encoding':
    case 'connection':
    case 'keep-alive':
    case 'upgrade':
    case 'trailer':
    case 'te':
    case 'proxy-connection':
      return true;
    default:
      return false;
  }
}

/** What was left out, for the caller to log. */
export interface Dropped {
  name: string;
  reason: 'framing' | 'invalid';
}

/**
 * Reads `input` as headers: a plain object (a value may be an array, sent as repeated headers),
 * a `Headers` or `Map`, or an array of `[name, value]` pairs. Names are lowercased; null and
 * undefined values are skipped. Every property is read inside `try`: the value may be hostile.
 * Names that differ only in case (`Content-Type` and `content-type` in one object) are one header,
 * as faas-js-runtime's (fastify's reply.headers()) are: the later value wins, but for Set-Cookie,
 * whose values are all sent. Pairs repeat a header on purpose: each is sent.
 */
export function safeHeaders(input: unknown, dropped?: Dropped[]): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  // Whether a name given again adds its values (pairs) rather than replacing the earlier ones.
  let repeats = false;
  const add = (rawName: unknown, rawValue: unknown) => {
    if (rawValue === undefined || rawValue === null || typeof rawName !== 'string') return;
    const name = rawName.toLowerCase();
    if (isFraming(name)) return void dropped?.push({ name, reason: 'framing' });
    // One value (a Headers' every value is one) without an array of its own.
    const one = Array.isArray(rawValue) ? undefined : String(rawValue);
    const values = one === undefined ? (rawValue as unknown[]).map(String) : undefined;
    try {
      validateHeaderName(name);
      if (one !== undefined) validateHeaderValue(name, one);
      else for (const value of values!) validateHeaderValue(name, value);
    } catch {
      return void dropped?.push({ name: printable(name), reason: 'invalid' });
    }
    // The common case, a name not seen before, looks no further.
    const previous = out[name];
    if (previous === undefined || !(repeats || name === 'set-cookie')) out[name] = one ?? (values!.length === 1 ? values![0] : values);
    else out[name] = [...(Array.isArray(previous) ? previous : [String(previous)]), ...(values ?? [one!])];
  };
  try {
    if (input === null || typeof input !== 'object') return out;
    if (Array.isArray(input) || typeof (input as Map<unknown, unknown>).entries === 'function') {
      repeats = Array.isArray(input);
      const pairs = repeats ? input : (input as Map<unknown, unknown>).entries();
      for (const pair of pairs as Iterable<unknown>) if (Array.isArray(pair) && pair.length === 2) add(pair[0], pair[1]);
      return out;
    }
    for (const name of Object.keys(input)) add(name, (input as Record<string, unknown>)[name]);
  } catch {
    // A throwing getter or Proxy trap: keep what was read before it.
    dropped?.push({ name: '(unreadable)', reason: 'invalid' });
  }
  return out;
}

// Header names quoted in a log line: short, and only characters that need no escaping.
function printable(name: string): string {
  const cut = name.length > 40 ? name.slice(0, 40) + '…' : name;
  return cut.replace(/[^\x21-\x7e\u2026]/g, '?');
}
