// The one function that writes a whole response, and the content types funcrun answers with.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';

export const TEXT = 'text/plain; charset=utf-8';
export const JSON_TYPE = 'application/json; charset=utf-8';
export const BINARY = 'application/octet-stream';
export const XML = 'application/xml; charset=utf-8';

/**
 * Whether an answer with this status carries no content (RFC 9110 sections 15.3.5, 15.3.6 and
 * 15.4.5): 204 and 304, which node frames without a length, and 205 (Reset Content), which needs
 * one (`Content-Length: 0`: node would send a 205's body, chunked). A body given is not sent.
 */
export function withoutContent(status: number): boolean {
  return status === 204 || status === 205 || status === 304;
}

/**
 * Writes a whole response. The body is final (string or bytes) before anything is written, so a
 * failure while preparing it can still become an error response. HEAD, 204, 205 and 304 send no
 * body (a 205 says `Content-Length: 0`).
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
  sendAsGiven(req, res, status, out, body, true);
}

/**
 * send() for headers without an undefined value (a light Response's, checked when it was made),
 * which are sent as they are. `mine`: whether they are funcrun's to change; if not, a copy is
 * made where Content-Length has to be among them.
 */
export function sendAsGiven(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  headers: OutgoingHttpHeaders,
  body: string | Buffer | undefined,
  mine = false,
): void {
  if (status === 204 || status === 304) body = undefined;
  else {
    // Reset Content: no content whatever the function gave, and a length that says so.
    if (status === 205) body = undefined;
    const length = body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    if (headers['content-length'] !== undefined || !lengthByNode(res, length)) {
      const out = mine ? headers : { ...headers };
      // As text, as every other header's value: node checks each value with a regular expression, whose
      // fast path, where the call site has only ever seen text, takes strings alone. (A template, not
      // String(), which optimised code leaves to a generic call.)
      out['content-length'] = `${length}`;
      headers = out;
    }
  }
  // One writeHead with every header: node's fast path, as a hand-written server would do it.
  res.writeHead(status, headers);
  if (req.method === 'HEAD' || body === undefined) res.end();
  else res.end(body);
}

/** What node's ServerResponse keeps of the length it frames the body with (node's own names). */
interface Framing {
  _contentLength?: unknown;
  _hasBody?: unknown;
  useChunkedEncodingByDefault?: unknown;
  _removedContLen?: unknown;
}

/**
 * Leaves Content-Length to node, which writes it from the length it keeps when no header gives
 * one, without checking it as a header value (some 800 instructions an answer; @hono/node-server
 * does the same). Only where node would write it so: a body allowed (not HEAD), HTTP/1.1, and no
 * framing header set on the response before. False when node does not keep these fields as it did.
 */
function lengthByNode(res: ServerResponse, length: number): boolean {
  const framing = res as ServerResponse & Framing;
  if (framing._contentLength !== null || framing._hasBody !== true || framing.useChunkedEncodingByDefault !== true || framing._removedContLen !== false)
    return false;
  if (res.hasHeader('content-length') || res.hasHeader('transfer-encoding') || res.hasHeader('trailer')) return false;
  framing._contentLength = length;
  return true;
}
