// A fetch handler's WHATWG Request, made from node's request without reading or copying its body:
// the body is node's request itself, as a stream pulled only when the handler reads it, counted
// against the upload limit as it comes (a BodyStream, body/body-stream.ts).
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { runtimeError } from '../errors';
import type { Target } from '../http/target';

// Methods a Request refuses to carry (the Fetch standard's forbidden methods).
const FORBIDDEN = new Set(['CONNECT', 'TRACE', 'TRACK']);
// A Host header that names a host (and port) and nothing else: a path or userinfo in it would
// change what `request.url` says. Linear: no two parts match the same characters.
const HOST = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9._-]{1,253})(?::[0-9]{1,5})?$/;

type RequestInitWithDuplex = RequestInit & { duplex?: 'half' };

/** Where a Request's signal comes from: the invocation's context, which makes it on first use. */
export interface SignalSource {
  readonly signal: AbortSignal;
}

const SOURCE = Symbol('funcrun signal source');

/**
 * A Request whose `signal` is the invocation's, made only if the handler looks at it: a Request
 * given a signal of its own to follow costs as much again as the Request itself.
 */
class IncomingRequest extends Request {
  readonly [SOURCE]: SignalSource;

  constructor(url: string, init: RequestInitWithDuplex, source: SignalSource) {
    super(url, init);
    this[SOURCE] = source;
  }
}

// On the prototype, over Request's own accessor (the DOM types call it a property).
Object.defineProperty(IncomingRequest.prototype, 'signal', {
  get(this: IncomingRequest): AbortSignal {
    return this[SOURCE].signal;
  },
  configurable: true,
});

/**
 * The Request: absolute URL (scheme from the connection, host from Host, else the listening
 * address), method and headers as received, the body as a stream (none for GET and HEAD), and
 * `signal`, the invocation's (aborted by the client going away, the timeout and the drain's cut),
 * read from `signal.signal` when the handler first asks for it.
 */
export function toRequest(req: IncomingMessage, target: Target, body: Readable | undefined, signal: SignalSource): Request {
  const method = req.method ?? 'GET';
  if (FORBIDDEN.has(method)) throw runtimeError('FUNCRUN_METHOD_NOT_ALLOWED', `method ${method} is not allowed on ${target.path}`);
  const init: RequestInitWithDuplex = { method, headers: headersOf(req) };
  if (body !== undefined && method !== 'GET' && method !== 'HEAD') {
    init.body = webStream(body);
    init.duplex = 'half';
  }
  try {
    return new IncomingRequest(urlOf(req, target), init, signal);
  } catch (err) {
    // A Host the URL standard refuses (`999.999.999.999`): the listening address, as for none.
    if (!(err instanceof TypeError) || req.headers.host === undefined) throw err;
    return new IncomingRequest(urlOf(req, target, false), init, signal);
  }
}

/** The headers as node parsed them: a repeated header is one value (a request's Set-Cookie aside, which node keeps apart). */
function headersOf(req: IncomingMessage): Record<string, string> | [string, string][] {
  const headers = req.headers;
  if (headers['set-cookie'] === undefined) return headers as Record<string, string>;
  const pairs: [string, string][] = [];
  for (const name in headers) {
    const value = headers[name]!;
    if (Array.isArray(value)) for (const one of value) pairs.push([name, one]);
    else pairs.push([name, value]);
  }
  return pairs;
}

/** The absolute URL: the scheme of the connection, the host its Host header names, the target as sent. */
export function urlOf(req: IncomingMessage, target: Target, byHost = true): string {
  const socket = req.socket as TLSSocket | undefined;
  const scheme = socket?.encrypted === true ? 'https' : 'http';
  const host = req.headers.host;
  const authority = byHost && host !== undefined && HOST.test(host) && portOk(host) ? host : listeningAddress(req);
  const sent = req.url ?? '/';
  // The origin-form target (`/path?query`) as sent; an absolute-form one by its path and query.
  const rest = sent.startsWith('/') ? sent : `${target.path.startsWith('/') ? '' : '/'}${target.path}${target.search === undefined ? '' : `?${target.search}`}`;
  return `${scheme}://${authority}${rest}`;
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
function webStream(body: Readable): ReadableStream<Uint8Array> {
  const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
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
