// A kept answer: what of a response is kept for duplicates (status, the function's headers, a body
// that is not a stream, within the answer limit), and its replay, sent as it was first sent.
import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { SentError } from '../../errors';
import type { Reply } from '../../respond';
import { send } from '../../send';
import { sizeOf, type Answer } from './memory-store';

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
  const answer = { status: sent.status, headers, body };
  // Counted exactly only when the bound of 3 bytes of UTF-8 a character says it may be too large.
  return sizeOf(answer) * 1.5 <= limit || exactSize(answer) <= limit ? answer : undefined;
}

/** The bytes of an answer as sent: its body and its headers. */
function exactSize(answer: Answer): number {
  let size = Buffer.byteLength(answer.body) + 16;
  for (const [name, value] of answer.headers) size += name.length + Buffer.byteLength(String(value));
  return size;
}

/** Sends a kept answer as it was first sent. */
export function replay(req: IncomingMessage, res: ServerResponse, answer: Answer): void {
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of answer.headers) headers[name] = value;
  send(req, res, answer.status, headers, answer.body.length === 0 ? undefined : answer.body);
}
