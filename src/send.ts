// The one function that writes a whole response, and the content types funcrun answers with.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';

export const TEXT = 'text/plain; charset=utf-8';
export const JSON_TYPE = 'application/json; charset=utf-8';
export const BINARY = 'application/octet-stream';
export const XML = 'application/xml; charset=utf-8';

/** On a response whose answer is kept for duplicates (idempotency.ts): send() gives it what it writes. */
export const KEEPS_ANSWER = Symbol('funcrun keeps the answer');
export type AnswerKeeper = (status: number, headers: OutgoingHttpHeaders, body: string | Buffer | undefined) => void;
type Keeping = ServerResponse & { [KEEPS_ANSWER]?: AnswerKeeper };

/**
 * Writes a whole response. The body is final (string or bytes) before anything is written, so a
 * failure while preparing it can still become an error response. HEAD, 204 and 304 send no body.
 */
export function send(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  headers: OutgoingHttpHeaders | undefined,
  body: string | Buffer | undefined,
): void {
  // A copy (the caller's object is not changed) without the headers whose value is undefined.
  const out: OutgoingHttpHeaders = { ...headers };
  for (const name in out) if (out[name] === undefined) delete out[name];
  if (status === 204 || status === 304) body = undefined;
  // As text, as every other header's value: node checks each value with a regular expression, whose
  // fast path, where the call site has only ever seen text, takes strings alone. (A template, not
  // String(), which optimised code leaves to a generic call.)
  else out['content-length'] = body === undefined ? '0' : `${typeof body === 'string' ? Buffer.byteLength(body) : body.length}`;
  (res as Keeping)[KEEPS_ANSWER]?.(status, out, body);
  // One writeHead with every header: node's fast path, as a hand-written server would do it.
  res.writeHead(status, out);
  if (req.method === 'HEAD' || body === undefined) res.end();
  else res.end(body);
}
