// With `lightWebGlobals` (web-globals.ts): a fetch handler's Request made lazily from node's
// request, as @hono/node-server makes its own. The method and URL are read on arrival, the
// headers made on first read, the body read whole from funcrun's limited stream (the body limit
// and its 413 hold) by text(), json(), arrayBuffer() and bytes(). A real Request (undici's) is
// made only when something needs one: the body as a stream, clone(), formData(), blob(), the
// rarer properties, `new Request(request)` and `fetch(request)` (the global Request and fetch
// unwrap a look-alike), and from then on the look-alike answers with it.
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { inspect, type InspectOptions } from 'node:util';
import { connectionOrigin } from '../http/connections';
import { URL_KEEPS, type Target } from '../http/target';
import { NATIVE, NativeRequest, nativeFetch, ordinaryInstanceOf, standFor } from './natives';
import {
  authorityOf,
  readAll,
  headersOf,
  methodOf,
  pathOf,
  schemeOf,
  utf8Decoded,
  webStream,
  type RequestInitWithDuplex,
  type SignalSource,
} from './web-request';

/** On a look-alike: its real Request, made on the first call. Registered: any copy's global Request and fetch unwrap any copy's look-alike. */
const REAL = Symbol.for('funcrun.web.request.real');

type Unwrappable = { [REAL](): Request };
type RequestInput = ConstructorParameters<typeof Request>[0];

/** The global Request while light: the platform's, but that `new Request(lookAlike)` is made from the look-alike's real Request. */
export class LightRequest extends NativeRequest {
  constructor(input: RequestInput, init: RequestInit | undefined = undefined) {
    super(unwrapped(input), init);
  }

  // A Request of the platform's (a clone, a real one) is a Request: the class stands for the platform's, not only its own.
  static override [Symbol.hasInstance](this: unknown, value: unknown): boolean {
    return ordinaryInstanceOf.call(this === LightRequest ? NativeRequest : this, value);
  }

  static readonly [NATIVE] = NativeRequest;
}
Object.defineProperty(LightRequest, 'name', { value: 'Request' });

/** The global fetch while light: the platform's, given a look-alike's real Request. */
export function lightFetch(input: RequestInput, init?: RequestInit): Promise<Response> {
  return nativeFetch(unwrapped(input), init);
}
Object.defineProperties(lightFetch, { name: { value: 'fetch' }, length: { value: 1 }, [NATIVE]: { value: nativeFetch } });

function unwrapped(input: RequestInput): RequestInput {
  return typeof input === 'object' && input !== null && REAL in input ? (input as unknown as Unwrappable)[REAL]() : input;
}

class LazyRequest {
  readonly #req: IncomingMessage;
  readonly #method: string;
  readonly #url: string;
  /** funcrun's limited stream of the body; undefined for none (GET, HEAD, no body). */
  readonly #body: Readable | undefined;
  readonly #source: SignalSource;
  #headers: Headers | undefined = undefined;
  #real: Request | undefined = undefined;
  /** Whether the body was read whole (text(), json(), arrayBuffer(), bytes()). */
  #used = false;

  constructor(req: IncomingMessage, method: string, url: string, body: Readable | undefined, source: SignalSource) {
    this.#req = req;
    this.#method = method;
    this.#url = url;
    this.#body = body;
    this.#source = source;
  }

  get method(): string {
    return this.#method;
  }

  get url(): string {
    return this.#url;
  }

  get headers(): Headers {
    return this.#real?.headers ?? (this.#headers ??= new Headers(headersOf(this.#req)));
  }

  /** The invocation's: aborted by the client going away, the timeout and the drain's cut. */
  get signal(): AbortSignal {
    return this.#source.signal;
  }

  get body(): ReadableStream<Uint8Array> | null {
    return this[REAL]().body;
  }

  get bodyUsed(): boolean {
    return this.#real === undefined ? this.#used : this.#real.bodyUsed;
  }

  text(): Promise<string> {
    const whole = this.#whole();
    return whole === undefined ? this[REAL]().text() : whole.then(utf8Decoded);
  }

  json(): Promise<unknown> {
    const whole = this.#whole();
    return whole === undefined ? this[REAL]().json() : whole.then((bytes) => JSON.parse(utf8Decoded(bytes)) as unknown);
  }

  arrayBuffer(): Promise<ArrayBuffer> {
    const whole = this.#whole();
    return whole === undefined ? this[REAL]().arrayBuffer() : whole.then((bytes) => new Uint8Array(bytes).buffer);
  }

  bytes(): Promise<Uint8Array<ArrayBuffer>> {
    const whole = this.#whole();
    return whole === undefined
      ? (this[REAL]() as Request & { bytes(): Promise<Uint8Array<ArrayBuffer>> }).bytes()
      : whole.then((bytes) => new Uint8Array(bytes));
  }

  /**
   * The body read whole from funcrun's stream (the bytes may be a view of a larger buffer: copied
   * where they are handed over), or undefined where the real Request answers: it is made already,
   * or the body is none or used (its read then rejects, or gives nothing, as the standard says).
   */
  #whole(): Promise<Uint8Array> | undefined {
    if (this.#real !== undefined || this.#body === undefined || this.#used) return undefined;
    this.#used = true;
    return readAll(this.#body);
  }

  /** The real Request, made on the first call: the same method, URL, headers, body (a used one used) and the invocation's signal. */
  [REAL](): Request {
    if (this.#real !== undefined) return this.#real;
    const init: RequestInitWithDuplex = { method: this.#method, headers: this.#headers ?? headersOf(this.#req), signal: this.#source.signal };
    if (this.#body !== undefined) {
      init.body = this.#used ? usedStream() : webStream(this.#body);
      init.duplex = 'half';
    }
    const real = new NativeRequest(this.#url, init);
    // Read already: the real one's body is used (disturbed and locked), so that clone() and new Request() refuse it as they would.
    if (this.#used) void real.body!.getReader().read();
    return (this.#real = real);
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    const shown = { method: this.#method, url: this.#url, headers: this.headers, bodyUsed: this.bodyUsed };
    return `Request ${inspect(shown, { ...options, depth: options.depth == null ? null : depth - 1 })}`;
  }
}

/** An empty stream, for a real Request made after the body was read: only its being used matters. */
function usedStream(): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({ start: (controller) => controller.close() });
}

// A look-alike is a Request: `instanceof Request` holds, its constructor is the global Request,
// and every property and method of a Request it does not answer itself is its real Request's.
standFor(LazyRequest.prototype, LightRequest, NativeRequest.prototype, REAL);

// The URL as the URL standard writes it (what a real Request's `url` gives): the connection's
// origin, made once per connection while the Host header stays the same, then the target. A
// target made of characters the standard leaves alone, without dot segments, is written as it
// is; any other goes through URL.
const DOT_SEGMENT = /\/(?:\.|%2e){1,2}(?:[/?]|$)/i;

/** Whether the URL standard writes `path` (origin-form: `/` first) as it is. */
function leftAlone(path: string): boolean {
  // Whether a dot segment (`/./`, `/../`, `/%2e/`) may be there: a dot after a slash, or an escape.
  let dotted = false;
  for (let i = 1; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c >= 128 || URL_KEEPS[c] === 0) return false;
    if (c === 0x25 || (c === 0x2e && path.charCodeAt(i - 1) === 0x2f)) dotted = true;
  }
  // One that is there is resolved.
  return !dotted || !DOT_SEGMENT.test(path);
}

/** The origin a request's URL has: its Host's, as URL writes it; the listening address's for a Host the URL standard refuses. */
function originOf(req: IncomingMessage): string {
  const scheme = schemeOf(req);
  try {
    return new URL(`${scheme}://${authorityOf(req)}/`).origin;
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    return new URL(`${scheme}://${authorityOf(req, false)}/`).origin;
  }
}

/** The absolute URL as a Request's `url` gives it. */
function requestUrl(req: IncomingMessage, host: string | undefined, target: Target, plain: boolean): string {
  // An absolute-form target names a host of its own (web-request.ts namedHost()): its origin is not the connection's to keep.
  const origin = plain || req.url!.charCodeAt(0) === 0x2f ? connectionOrigin(req, host, originOf) : originOf(req);
  // A plain target (target.ts) is written as it is, and needs no second look.
  if (plain) return origin + req.url!;
  const path = pathOf(req, target);
  return path.charCodeAt(0) === 0x2f && leftAlone(path) ? origin + path : new URL(origin + path).href;
}

/**
 * The look-alike Request of node's request (what toRequest() gives as a real one): the same
 * absolute URL, method and headers, `body` funcrun's limited stream of the body (undefined for
 * none), `signal` the invocation's.
 */
export function lazyRequest(
  req: IncomingMessage,
  host: string | undefined,
  target: Target,
  plain: boolean,
  body: Readable | undefined,
  signal: SignalSource,
): Request {
  const method = methodOf(req, target);
  const read = method === 'GET' || method === 'HEAD' ? undefined : body;
  return new LazyRequest(req, method, requestUrl(req, host, target, plain), read, signal) as unknown as Request;
}
