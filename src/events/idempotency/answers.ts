// A kept answer: what of a response is kept for duplicates (status, the function's headers, a body
// that is not a stream, within the answer limit), and its replay, sent as it was first sent; but an
// event funcrun wrote is written again in the mode of the request the replay answers, as a fresh
// answer would be (a binary duplicate of a structured delivery gets a binary answer).
import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { CloudEvent } from 'cloudevents';
import type { SentError } from '../../errors';
import type { Reply } from '../../respond';
import { writtenMode, type Mode } from '../../cloudevents/cloudevent';
import { encodeEvent } from '../../cloudevents/reply';
import { bodyKind, parseMediaType } from '../../body/media-type';
import { decodeComponent } from '../../routing/router';
import { send } from '../../send';
import { sizeOf, type Answer, type EventMode } from './memory-store';

// Headers of one connection, not of the answer: never kept or replayed. The answer's headers are
// the function's own (CORS's, set per request, are the response's, not the answer's): all kept.
const NOT_KEPT = new Set(['connection', 'keep-alive', 'transfer-encoding', 'date']);
const isKept = (name: string) => !NOT_KEPT.has(name);

/** An answer the sender will not send again for: 2xx and 4xx (but 408 and 429, which ask for a retry). */
export function isFinal(status: number): boolean {
  return status >= 200 && status < 500 && status !== 408 && status !== 429;
}

/** What was sent, as kept for duplicates (headers but the connection's), while it is at most `limit` bytes; not a stream. */
export function answerOf(sent: Reply | SentError, limit: number): Answer | undefined {
  const body = sent.body ?? '';
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) return undefined;
  const headers: [string, OutgoingHttpHeader][] = [];
  for (const name in sent.headers) {
    const value = sent.headers[name];
    if (value !== undefined && isKept(name.toLowerCase())) headers.push([name, value]);
  }
  const answer: Answer = { status: sent.status, headers, body };
  const mode = (sent as Reply).eventMode;
  if (mode !== undefined) answer.mode = mode;
  // Counted exactly only when the bound of 3 bytes of UTF-8 a character says it may be too large.
  return sizeOf(answer) * 1.5 <= limit || exactSize(answer) <= limit ? answer : undefined;
}

/** The bytes of an answer as sent: its body and its headers. */
function exactSize(answer: Answer): number {
  let size = Buffer.byteLength(answer.body) + 16;
  for (const [name, value] of answer.headers) size += name.length + Buffer.byteLength(String(value));
  return size;
}

/** How the request a replay answers has its events answered: replyMode(), and the SDK's binary encoding (compat.ts). */
export interface ReplayMode {
  mode: Mode | undefined;
  asSdk: boolean;
}

/** Sends a kept answer as it was first sent, its event (if funcrun wrote one) in `to`'s mode. */
export function replay(req: IncomingMessage, res: ServerResponse, kept: Answer, to: ReplayMode): void {
  const answer = inMode(kept, to);
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of answer.headers) headers[name] = value;
  send(req, res, answer.status, headers, answer.body.length === 0 ? undefined : answer.body);
}

/**
 * The answer with its event written in the mode `to` answers in, when that is another: read back
 * from the mode it was kept in, as a receiver reads it, and encoded as a fresh answer is (an event
 * binary mode cannot carry goes structured again). A batch is answered as a batch either way. The
 * function's own headers stay; as it was when it cannot be read back (it always can, funcrun wrote it).
 */
export function inMode(answer: Answer, to: ReplayMode): Answer {
  const { mode } = to;
  if (answer.mode === undefined || (mode !== 'binary' && mode !== 'structured') || mode === answer.mode) return answer;
  try {
    const event = answer.mode === 'structured' ? fromStructured(answer) : fromBinary(answer);
    if (event === undefined) return answer;
    // The event carries the first answer's trace already, as a replay of it should.
    const encoded = encodeEvent(event as unknown as CloudEvent<unknown>, mode, undefined, to.asSdk);
    const headers = answer.headers.filter(([name]) => !isEventHeader(name.toLowerCase()));
    for (const name in encoded.headers) headers.push([name, encoded.headers[name]]);
    const written: EventMode = writtenMode(encoded.headers['content-type']);
    return { status: answer.status, headers, body: encoded.body ?? '', mode: written };
  } catch {
    return answer;
  }
}

/** A header that is part of an event's encoding: its attributes (binary) or its media type. */
function isEventHeader(name: string): boolean {
  return name === 'content-type' || name === 'content-length' || name.startsWith('ce-');
}

/** The event of a structured answer: its JSON, `data_base64` as bytes again. */
function fromStructured(answer: Answer): Record<string, unknown> | undefined {
  const json = JSON.parse(textOf(answer.body)) as unknown;
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return undefined;
  const { data_base64: base64, ...event } = json as Record<string, unknown>;
  if (typeof base64 === 'string') event.data = Buffer.from(base64, 'base64');
  return event;
}

/**
 * The event of a binary answer: `ce-*` headers (percent-decoded) as its attributes, Content-Type as
 * its datacontenttype, and the body as its data: parsed JSON for a JSON type, text for another
 * text, else bytes (written back as `data_base64`).
 */
function fromBinary(answer: Answer): Record<string, unknown> {
  // Attribute names are header names: none of them may reach a prototype.
  const event = Object.create(null) as Record<string, unknown>;
  let contentType: string | undefined;
  for (const [name, value] of answer.headers) {
    const lower = name.toLowerCase();
    if (lower === 'content-type') contentType = String(value);
    else if (lower.startsWith('ce-')) event[lower.slice(3)] = decodeComponent(String(value));
  }
  if (contentType !== undefined) event.datacontenttype = contentType;
  const { body } = answer;
  if (body.length === 0) return event;
  const kind = bodyKind(parseMediaType(contentType));
  const text = kind === 'binary' ? undefined : utf8(body);
  if (text === undefined) event.data = typeof body === 'string' ? Buffer.from(body) : body;
  else if (kind !== 'json') event.data = text;
  else {
    try {
      event.data = JSON.parse(text);
    } catch {
      event.data = text;
    }
  }
  return event;
}

function textOf(body: Buffer | string): string {
  return typeof body === 'string' ? body : body.toString('utf8');
}

/** The body as text, or undefined when its bytes are not UTF-8. */
function utf8(body: Buffer | string): string | undefined {
  if (typeof body === 'string') return body;
  return isUtf8(body) ? body.toString('utf8') : undefined;
}
