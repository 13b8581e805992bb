// A fetch handler's WHATWG Request, made from node's request without reading or copying its body:
// the body is node's request itself, as a stream pulled only when the handler reads it, counted
// against the upload limit as it comes (a BodyStream, body/body-stream.ts).
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { runtimeError } from '../errors';
import { authorityIn, type Target } from '../http/target';
import { NativeRequest } from './natives';
import { BodyStream } from '../body/body-stream';

// A Host header that names a host (and port) and nothing else: a path or userinfo in it would
// change what `request.url` says. Linear: no two parts match the same characters.
const HOST = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9._-]{1,253})(?::[0-9]{1,5})?$/;

export type RequestInitWithDuplex = RequestInit & { duplex?: 'half' };

/** Where a Request's signal comes from: the invocation's context, which makes it on first use. */
export interface SignalSource {
  readonly signal: AbortSignal;
}

const SOURCE = Symbol('funcrun signal source');
const BODY = Symbol('funcrun request body');
const READ = Symbol('funcrun request body read whole');
const STREAM = Symbol('funcrun request web body');

/**
 * A Request whose `signal` is the invocation's, made only if the handler looks at it: a Request
 * given a signal of its own to follow costs as much again as the Request itself. Its `text()`,
 * `json()`, `arrayBuffer()` and `bytes()` read node's stream straight into one buffer, without
 * the web stream between (which stays the Request's `body`, locked from then on, as after a read).
 */
class IncomingRequest extends NativeRequest {
  readonly [SOURCE]: SignalSource;
  readonly [BODY]: Readable | undefined;
  /** The web stream of [BODY] the Request was made with: `clone()` puts a branch of a tee in its place. */
  readonly [STREAM]: ReadableStream<Uint8Array> | undefined;
  /** Whether the body was read whole by one of the methods above. */
  declare [READ]: boolean | undefined;

  constructor(url: string, init: RequestInitWithDuplex, source: SignalSource, body: Readable | undefined) {
    super(url, init);
    this[SOURCE] = source;
    this[BODY] = body;
    this[STREAM] = init.body as ReadableStream<Uint8Array> | undefined;
  }
}

// On the prototype, over Request's own accessors (the DOM types call them properties).
Object.defineProperty(IncomingRequest.prototype, 'signal', {
  get(this: IncomingRequest): AbortSignal {
    return this[SOURCE].signal;
  },
  configurable: true,
});
// `request.constructor` is the global Request (`new request.constructor(url)` makes a Request), as for undici's own.
Object.defineProperty(IncomingRequest.prototype, 'constructor', { value: NativeRequest, writable: true, configurable: true, enumerable: false });
const nativeBodyUsed = Object.getOwnPropertyDescriptor(NativeRequest.prototype, 'bodyUsed')!.get!;
const nativeBody = Object.getOwnPropertyDescriptor(NativeRequest.prototype, 'body')!.get!;
Object.defineProperty(IncomingRequest.prototype, 'bodyUsed', {
  get(this: IncomingRequest): boolean {
    return this[READ] === true || (nativeBodyUsed.call(this) as boolean);
  },
  configurable: true,
});
const native = NativeRequest.prototype as unknown as Record<'text' | 'json' | 'arrayBuffer' | 'bytes', (this: Request) => Promise<unknown>>;
const { text, json, arrayBuffer, bytes } = native;
// Methods as undici's are: on the prototype, writable, not enumerable.
for (const [name, method] of Object.entries({
  text(this: IncomingRequest): Promise<unknown> {
    const whole = readWhole(this);
    return whole === undefined ? text.call(this) : whole.then(utf8Decoded);
  },
  json(this: IncomingRequest): Promise<unknown> {
    const whole = readWhole(this);
    return whole === undefined ? json.call(this) : whole.then((read) => JSON.parse(utf8Decoded(read)) as unknown);
  },
  arrayBuffer(this: IncomingRequest): Promise<unknown> {
    const whole = readWhole(this);
    return whole === undefined ? arrayBuffer.call(this) : whole.then((read) => read.buffer);
  },
  bytes(this: IncomingRequest): Promise<unknown> {
    const whole = readWhole(this);
    return whole === undefined ? bytes.call(this) : whole;
  },
})) {
  Object.defineProperty(IncomingRequest.prototype, name, { value: method, writable: true, configurable: true, enumerable: false });
}

/**
 * The body read whole from node's stream, as undici's own read would give it (the same errors:
 * the stream's, a 413 past the limit); undefined where undici's own read is the answer (no body,
 * or one already used: it rejects as the standard says; after `clone()`, whose tee reads node's
 * stream, the body is a branch of it, read as undici reads it). The web body is locked first, so that
 * `clone()`, `new Request(request)` and `body.getReader()` find it used.
 */
function readWhole(request: IncomingRequest): Promise<Uint8Array<ArrayBuffer>> | undefined {
  const body = request[BODY];
  if (body === undefined) return undefined;
  const stream = nativeBody.call(request) as ReadableStream<Uint8Array> | null;
  if (stream === null || stream !== request[STREAM] || stream.locked || (nativeBodyUsed.call(request) as boolean)) return undefined;
  stream.getReader();
  request[READ] = true;
  return collect(body);
}

/**
 * A body read whole: the stream's errors (a 413 past the limit) are the read's. funcrun's own
 * stream of it is read without a stream between (BodyStream's whole()); the bytes may then be a
 * view of a larger buffer.
 */
export function readAll(body: Readable): Promise<Uint8Array> {
  return body instanceof BodyStream ? body.whole() : gather(body);
}

async function gather(body: Readable): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** A body read whole, into one buffer of its own (as undici's). */
export async function collect(body: Readable): Promise<Uint8Array<ArrayBuffer>> {
  return new Uint8Array(await readAll(body));
}

const decoder = new TextDecoder();

/** UTF-8 decoded as undici decodes a body: one byte order mark dropped, then the decoder's own rule. */
export function utf8Decoded(bytes: Uint8Array): string {
  if (bytes.length === 0) return '';
  return decoder.decode(bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes);
}

/**
 * The Request: absolute URL (scheme from the connection, host from Host, else the listening
 * address), method and headers as received (but the connection's own: headersOf()), the body as
 * a stream (none for GET and HEAD), and `signal`, the invocation's (aborted by the client going
 * away, the timeout and the drain's cut), read from `signal.signal` when the handler first asks
 * for it.
 */
export function toRequest(req: IncomingMessage, target: Target, body: Readable | undefined, signal: SignalSource): Request {
  const method = methodOf(req, target);
  const init: RequestInitWithDuplex = { method, headers: headersOf(req) };
  if (body !== undefined && method !== 'GET' && method !== 'HEAD') {
    init.body = webStream(body);
    init.duplex = 'half';
  }
  try {
    return new IncomingRequest(urlOf(req, target), init, signal, init.body === undefined ? undefined : body);
  } catch (err) {
    // A host the URL standard refuses (`999.999.999.999`): the listening address, as for none.
    if (!(err instanceof TypeError)) throw err;
    return new IncomingRequest(urlOf(req, target, false), init, signal, init.body === undefined ? undefined : body);
  }
}

const FETCH_METHODS = 'GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS';

/** Whether a Request refuses to carry `method` (the Fetch standard's forbidden methods): compared, not hashed. */
function isForbidden(method: string): boolean {
  return method === 'CONNECT' || method === 'TRACE' || method === 'TRACK';
}

/** The request's method; one a Request cannot carry is a 405. */
export function methodOf(req: IncomingMessage, target: Target): string {
  const method = req.method ?? 'GET';
  // A 405 says what is allowed (RFC 9110 section 15.5.6): the methods a Request carries, which are the handler's to answer.
  if (isForbidden(method))
    throw runtimeError('FUNCRUN_METHOD_NOT_ALLOWED', `method ${method} is not allowed on ${target.path}`, { headers: { allow: FETCH_METHODS } });
  return method;
}

/**
 * The headers as node parsed them, but the connection's own: a repeated header is one value (a
 * request's Set-Cookie aside, which node keeps apart), and the connection-level headers (RFC 9110
 * section 7.6.1: Connection, the headers it names, and those below) are left out. They describe
 * the hop from the client to funcrun, whose framing funcrun reads (the body stays the body, under
 * its limit); passed on (`fetch(new Request(url, request))`), undici refuses them.
 */
export function headersOf(req: IncomingMessage): Record<string, string> | [string, string][] {
  const headers = req.headers;
  if (headers['set-cookie'] === undefined && !connectionLevel(headers)) return headers as Record<string, string>;
  const named = namedByConnection(headers.connection);
  const pairs: [string, string][] = [];
  for (const name in headers) {
    if (CONNECTION_LEVEL.has(name) || named?.has(name) === true) continue;
    const value = headers[name]!;
    if (Array.isArray(value)) for (const one of value) pairs.push([name, one]);
    else pairs.push([name, value]);
  }
  return pairs;
}

// The connection-level headers RFC 9110 (section 7.6.1) names, beside those Connection names.
const CONNECTION_LEVEL = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** Whether the request carries any connection-level header (most carry none: their headers are passed as node made them). */
function connectionLevel(headers: IncomingMessage['headers']): boolean {
  return (
    headers.connection !== undefined ||
    headers['transfer-encoding'] !== undefined ||
    headers['keep-alive'] !== undefined ||
    headers.upgrade !== undefined ||
    headers.te !== undefined ||
    headers.trailer !== undefined ||
    headers['proxy-connection'] !== undefined
  );
}

/** The header names a Connection header lists (node joins repeated ones with commas), read once; undefined for none. */
function namedByConnection(connection: string | undefined): Set<string> | undefined {
  if (connection === undefined) return undefined;
  const named = new Set<string>();
  for (const token of connection.split(',')) {
    const name = token.trim().toLowerCase();
    if (name !== '') named.add(name);
  }
  return named;
}

/** The absolute URL: the scheme of the connection, the host its Host header names, the target as sent. */
export function urlOf(req: IncomingMessage, target: Target, byHost = true): string {
  return `${schemeOf(req)}://${authorityOf(req, byHost)}${pathOf(req, target)}`;
}

export function schemeOf(req: IncomingMessage): 'http' | 'https' {
  return (req.socket as TLSSocket | undefined)?.encrypted === true ? 'https' : 'http';
}

/** The host (and port) the request names, when it names a valid one (namedHost()); else the listening address. */
export function authorityOf(req: IncomingMessage, byHost = true): string {
  const host = byHost ? namedHost(req) : undefined;
  return host !== undefined && HOST.test(host) && portOk(host) ? host : listeningAddress(req);
}

/**
 * An absolute-form target's host (`GET http://host/path`): a server ignores the Host header then
 * (RFC 9112 section 3.2.2); else the Host header's.
 */
function namedHost(req: IncomingMessage): string | undefined {
  const url = req.url ?? '/';
  const authority = authorityIn(url);
  return authority === undefined ? req.headers.host : url.slice(authority.start, authority.end);
}

/** The origin-form target (`/path?query`) as sent; an absolute-form one by its path and query. */
export function pathOf(req: IncomingMessage, target: Target): string {
  const sent = req.url ?? '/';
  return sent.startsWith('/') ? sent : `${target.path.startsWith('/') ? '' : '/'}${target.path}${target.search === undefined ? '' : `?${target.search}`}`;
}

function portOk(host: string): boolean {
  const colon = host.lastIndexOf(':');
  return colon === -1 || host.endsWith(']') || Number(host.slice(colon + 1)) <= 65535;
}

function listeningAddress(req: IncomingMessage): string {
  const { localAddress, localPort } = req.socket ?? {};
  if (localAddress === undefined || localPort === undefined) return 'localhost';
  const address = localAddress.startsWith('::ffff:') ? localAddress.slice(7) : localAddress;
  return address.includes(':') ? `[${address}]:${localPort}` : `${address}:${localPort}`;
}

/**
 * A node stream as a web ReadableStream that reads a chunk only when one is asked for (no queue
 * of its own), ends as it ends, errors with its error (a 413 past the limit: `text()` rejects),
 * and destroys it when cancelled.
 */
export function webStream(body: Readable): ReadableStream<Uint8Array> {
  // Made on the first read: a body read whole (text(), json()) is read without it.
  let chunks: AsyncIterator<Buffer> | undefined;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        chunks ??= body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
        const { value, done } = await chunks.next();
        if (done === true) controller.close();
        else controller.enqueue(value);
      },
      cancel() {
        body.destroy();
      },
    },
    { highWaterMark: 0 },
  );
}
