// Turning whatever a handler returned into a response (the seed's return rules), and the one
// function that writes a response.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { asCloudEvent, encodeEvent, type Mode } from './cloudevent';

export const TEXT = 'text/plain; charset=utf-8';
export const JSON_TYPE = 'application/json; charset=utf-8';
export const BINARY = 'application/octet-stream';
export const XML = 'application/xml; charset=utf-8';

// An XML DOM Document (such as the one an XML request arrives as) serialises with toString().
function isXmlDocument(value: object): boolean {
  return (value as { nodeType?: unknown }).nodeType === 9 && typeof value.toString === 'function';
}

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
  const out: OutgoingHttpHeaders = {};
  if (headers !== undefined) {
    for (const name in headers) {
      const value = headers[name];
      if (value !== undefined) out[name] = value;
    }
  }
  if (status === 204 || status === 304) body = undefined;
  else out['content-length'] = body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  // One writeHead with every header: node's fast path, as a hand-written server would do it.
  res.writeHead(status, out);
  if (req.method === 'HEAD' || body === undefined) res.end();
  else res.end(body);
}

/** A response decided but not yet written. */
interface Reply {
  status: number;
  headers?: OutgoingHttpHeaders;
  body?: string | Buffer | Readable;
}

/** Sends a handler's return value by the seed's return rules. `mode` is the request's CloudEvents mode. */
export function respond(req: IncomingMessage, res: ServerResponse, value: unknown, mode: Mode | undefined): void {
  const reply = toReply(value, mode);
  if (reply.body instanceof Readable) return pipe(req, res, reply.status, reply.headers, reply.body);
  send(req, res, reply.status, reply.headers, reply.body);
}

export function toReply(value: unknown, mode: Mode | undefined): Reply {
  switch (typeof value) {
    case 'undefined':
      return { status: 204 };
    case 'string':
      return { status: 200, headers: { 'content-type': TEXT }, body: value };
    case 'number':
    case 'boolean':
    case 'bigint':
    case 'symbol':
    case 'function':
      // The seed: a number or boolean returned directly, not wrapped, gives an empty 204.
      return { status: 204 };
  }
  if (value === null) return { status: 204 };
  const object = value as object;
  const event = asCloudEvent(object);
  if (event !== undefined) {
    const { headers, body } = encodeEvent(event, mode ?? 'binary');
    return { status: 200, headers, body };
  }
  if (Array.isArray(object) && mode === 'batch' && object.length > 0) {
    const events = object.map((item) => (item !== null && typeof item === 'object' ? asCloudEvent(item) : undefined));
    if (events.every((e) => e !== undefined)) {
      const { headers, body } = encodeEvent(events as NonNullable<(typeof events)[number]>[], 'batch');
      return { status: 200, headers, body };
    }
  }
  if (Buffer.isBuffer(object) || object instanceof Uint8Array) {
    return { status: 200, headers: { 'content-type': BINARY }, body: asBuffer(object) };
  }
  if (object instanceof Readable) return { status: 200, headers: { 'content-type': BINARY }, body: object };
  if (isXmlDocument(object)) return { status: 200, headers: { 'content-type': XML }, body: String(object) };
  if ('statusCode' in object || 'headers' in object || 'body' in object) return structured(object, mode);
  return { status: 200, headers: { 'content-type': JSON_TYPE }, body: stringify(object) };
}

/** `{ statusCode, headers, body }`: a response the function spelled out. Also an SDK `Message`. */
function structured(value: { statusCode?: unknown; headers?: unknown; body?: unknown }, mode: Mode | undefined): Reply {
  const { statusCode, body } = value;
  if (statusCode !== undefined && !(Number.isInteger(statusCode) && (statusCode as number) >= 200 && (statusCode as number) <= 599)) {
    throw new Error(`the function returned an invalid statusCode ${JSON.stringify(statusCode)}: expected an integer from 200 to 599`);
  }
  if (value.headers !== undefined && (value.headers === null || typeof value.headers !== 'object')) {
    throw new Error('the function returned headers that are not an object');
  }
  const headers: OutgoingHttpHeaders = {};
  let userType = false;
  for (const [name, header] of Object.entries((value.headers ?? {}) as Record<string, unknown>)) {
    if (header === undefined || header === null) continue;
    const lower = name.toLowerCase();
    if (lower === 'content-type') userType = true;
    headers[lower] = Array.isArray(header) ? header.map(String) : String(header);
  }
  const content = bodyOf(body, mode);
  if (content.type !== undefined && !userType) headers['content-type'] = content.type;
  if (content.headers) for (const name in content.headers) if (!(name in headers)) headers[name] = content.headers[name];
  const status = (statusCode as number | undefined) ?? (content.body === undefined ? 204 : 200);
  return { status, headers, body: content.body };
}

function bodyOf(body: unknown, mode: Mode | undefined): { body?: string | Buffer | Readable; type?: string; headers?: OutgoingHttpHeaders } {
  if (body === undefined || body === null) return {};
  switch (typeof body) {
    case 'string':
      return { body, type: TEXT };
    case 'number':
    case 'boolean':
    case 'bigint':
      return { body: String(body), type: TEXT };
    case 'object': {
      if (Buffer.isBuffer(body) || body instanceof Uint8Array) return { body: asBuffer(body), type: BINARY };
      if (body instanceof Readable) return { body, type: BINARY };
      if (isXmlDocument(body)) return { body: String(body), type: XML };
      const event = asCloudEvent(body);
      if (event !== undefined) {
        const encoded = encodeEvent(event, mode ?? 'binary');
        return { body: encoded.body, type: encoded.headers['content-type'], headers: encoded.headers };
      }
      return { body: stringify(body), type: JSON_TYPE };
    }
    default:
      throw new Error(`the function returned a body of type ${typeof body}`);
  }
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function stringify(value: unknown): string {
  const json = JSON.stringify(value);
  // toJSON() may return undefined; send JSON null rather than an empty body claiming to be JSON.
  return json === undefined ? 'null' : json;
}

function pipe(req: IncomingMessage, res: ServerResponse, status: number, headers: OutgoingHttpHeaders | undefined, stream: Readable): void {
  for (const name in headers) res.setHeader(name, headers[name]!);
  res.statusCode = status;
  if (req.method === 'HEAD') {
    stream.destroy();
    res.end();
    return;
  }
  stream.on('error', (err) => {
    // Headers are gone already: the only honest signal left is a cut connection.
    res.destroy(err);
  });
  stream.pipe(res);
}
