// What idempotency knows an event by: its key (source and id, the CloudEvents rule, or the
// module's own key function; a batch's from its events' keys), the digest that tells another event
// delivered under the same key from a duplicate, and the identity its log lines name.
import type { CloudEvent } from 'cloudevents';
import { sha256, sha256Hash } from '../../util/random';
import { runtimeError } from '../../errors';
import { eventIdentity } from '../../cloudevents/outcomes';
import { parseBody } from '../../body/body';
import { parseMediaType, type MediaType } from '../../body/media-type';
import type { IdempotencySettings } from './settings';

/** One delivery's events: an event, or a batch's. */
export type Events = CloudEvent<unknown> | CloudEvent<unknown>[];

type KeySettings = Pick<IdempotencySettings, 'namespace' | 'hashKeys' | 'keyLimit' | 'key'>;

/** The delivery's key in the store. Throws the 400 of a key past the key limit, or what the module's key function threw. */
export function keyOf(events: Events, settings: KeySettings): string {
  const { namespace, hashKeys } = settings;
  // A batch is one delivery: known by its events' keys, in order, hashed whatever the store (a
  // batch of many events would be past any key limit). Its own prefix: no event's key is a batch's.
  if (Array.isArray(events)) return `${hashKeys ? namespace : ''}batch:${sha256(JSON.stringify(events.map((e) => eventKey(e, settings))))}`;
  const key = eventKey(events, settings);
  if (hashKeys) return namespace + sha256(key);
  // In memory, source and id as they are; the module's own keys (any text) hashed.
  return settings.key === undefined ? `e:${key}` : `k:${sha256(key)}`;
}

/** One event's key, checked: within the key limit. */
function eventKey(event: CloudEvent<unknown>, settings: KeySettings): string {
  const own = settings.key;
  // Source and id, told apart by the source's length: no source and id make another pair's key.
  const key = own === undefined ? `${event.source.length}:${event.source}${event.id}` : own(event);
  if (typeof key !== 'string') throw new TypeError(`events.idempotency.key() returned ${typeof key}, not a string`);
  if (key.length > settings.keyLimit) {
    throw runtimeError('FUNCRUN_EVENT_KEY_TOO_LONG', `the event's idempotency key is longer than ${settings.keyLimit} characters`, {
      details: { limit: settings.keyLimit },
    });
  }
  return key;
}

/**
 * What makes an event this one beside its source and id, digested: its type, subject, data schema,
 * the data's media type (without its parameters; none is JSON, as in the JSON format) and the data
 * as binary mode reads it (bytes of JSON, text, XML or a form parsed by that media type, as a
 * structured event's data_base64 may carry them), so that a binary and a structured delivery of
 * one event agree. Values are compared as JSON: as JavaScript reads them (numbers past 2^53 may
 * compare equal, and of keys given twice the last is kept); the order of an object's keys counts.
 */
export function digestOf(events: Events): string {
  const hash = sha256Hash();
  for (const event of Array.isArray(events) ? events : [events]) {
    const media = parseMediaType(event.datacontenttype);
    hash.update(JSON.stringify([event.type, event.subject ?? null, event.dataschema ?? null, media?.type ?? 'application/json']), 'utf16le');
    let data = event.data;
    if (data instanceof Uint8Array && media !== undefined) data = readAs(data, media);
    if (data instanceof Uint8Array) {
      hash.update(`b${data.length}:`);
      hash.update(data);
      continue;
    }
    let text: string;
    try {
      text = typeof data === 'string' ? data : (JSON.stringify(data) ?? '');
    } catch {
      // Not JSON (a parsed XML document): its text.
      text = String(data);
    }
    hash.update(`${typeof data === 'string' ? 's' : 'j'}${text.length}:`);
    hash.update(text, 'utf16le');
  }
  return hash.digest('base64url');
}

/** Bytes read as binary mode reads a body of this media type; as they are when they do not parse. */
function readAs(bytes: Uint8Array, media: MediaType): unknown {
  try {
    return parseBody(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), media);
  } catch {
    return bytes;
  }
}

/** The delivery as its log lines name it: the event, or a batch's size and first event. */
export function identityOf(events: Events): object {
  if (!Array.isArray(events)) return eventIdentity(events);
  return events.length === 0 ? { events: 0 } : { events: events.length, first: eventIdentity(events[0]) };
}
