import { IncomingMessage } from 'node:http';

// What came out of parsing the request. Such values are data: a function that returns or throws
// them (or a part of them) must not let the client choose the status, headers or kind of answer.

/** What a request was parsed into, as far as it has been read. */
export interface RequestInput {
  /** The request: it stands for every header object node derives from it. */
  readonly request?: IncomingMessage;
  /** The parsed body, or the received events' data. */
  readonly data?: unknown;
  readonly query?: object;
  readonly params?: object;
  /** The received event, or a batch's events: instances, recognised by identity. */
  readonly events?: object;
  /** What `authorize()` was given. */
  readonly access?: object;
}

/** Whether `value` is the request itself, or one of the events read from it (compared by identity, never walked). */
export function isReceived(value: unknown, input: RequestInput): boolean {
  const events = input.events;
  return value === input.request || value === events || (Array.isArray(events) && events.includes(value));
}

/** True for objects made by a class: not `{}` literals, arrays, parsed JSON or null-prototype maps. */
export function isInstance(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto !== null && proto !== Object.prototype && proto !== Array.prototype;
}

/**
 * Whether `value` is one of the objects in `input` (what the request was parsed into), or inside
 * one. Parsed data is plain objects and arrays, so only those are walked: linear in the size of
 * the request, and only asked for values that look like response instructions.
 */
export function isPartOf(value: object, input: RequestInput): boolean {
  const seen = new Set<object>();
  const pending: unknown[] = [input.request, input.data, input.query, input.params, input.events, input.access];
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === value) return true;
    // The request itself stands for every header object node derives from it (asked only here,
    // so a request that never needs this check never builds `headersDistinct`).
    if (node instanceof IncomingMessage) {
      pending.push(node.headers, node.headersDistinct, node.trailers, node.trailersDistinct, node.rawHeaders, node.rawTrailers, node.socket);
      continue;
    }
    if (node === null || typeof node !== 'object' || seen.has(node) || isInstance(node)) continue;
    seen.add(node);
    if (Array.isArray(node)) for (const item of node) pending.push(item);
    else for (const key of Object.keys(node)) pending.push((node as Record<string, unknown>)[key]);
  }
  return false;
}
