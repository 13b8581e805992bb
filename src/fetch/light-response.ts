// With `lightWebGlobals` (web-globals.ts): the global Response, light where it can be. A Response
// of text, or of no body, whose headers are an object of text or a Headers keeps its body, status,
// status text and headers as given, checked as the platform checks them, and web-response.ts
// writes it without a web stream between; the rest (a stream, bytes, headers as pairs, a value
// the platform would change or refuse) is the platform's own. A real Response (undici's) is made
// from a light one only when something needs it: its body as a stream, a read of it, clone().
import { inspect, type InspectOptions } from 'node:util';
import { ANSWERED_MODE } from '../cloudevents/web';
import { isFraming } from '../http/headers';
import { NATIVE, NativeResponse, ordinaryInstanceOf, standFor } from './natives';

/** On a light Response: its parts (undefined once its real Response is made). Registered: web-response.ts reads any copy's. */
export const LIGHT = Symbol.for('funcrun.web.response.parts');
/** On a light Response: its real Response, made on the first call. */
const REAL = Symbol.for('funcrun.web.response.real');

/** What web-response.ts writes of a light Response. */
export interface LightParts {
  readonly status: number;
  readonly statusText: string;
  readonly body: string | null;
  /** The headers, checked, names lowercased, with the Content-Type a text body gets. */
  readonly fields: Record<string, string>;
  /** The Headers `response.headers` made of them, once asked for: from then on the headers are its. */
  headers: Headers | undefined;
  /** Whether `fields` names a framing header (funcrun's to write: left out when sent). */
  framing: boolean;
}

const TEXT_TYPE = 'text/plain;charset=UTF-8';
// A header name (a token), and a value the platform keeps as it is (no whitespace around it, no
// character a Headers refuses or a ByteString cannot hold): any other is the platform's to check.
// Values and status texts are ASCII: node writes the head of an answer whose body is text as
// UTF-8, where a byte above 0x7f (a ByteString's `é`) is one byte, as the platform's are sent.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const VALUE = /^(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?$/;
const REASON = /^[\t\x20-\x7e]*$/;
const NOT_ASCII = /[^\x00-\x7f]/;
// Names and values found good before, looked up before they are checked: an app's are mostly the
// same constants each time, whose lookup (their hash kept in the string) costs a fraction of a
// regular expression's call. Each holds a bounded number of short strings, whatever an app sends.
const GOOD_NAMES = new Map<string, string>();
const GOOD_VALUES = new Set<string>();
const GOOD_MOST = 256;
const GOOD_LONGEST = 64;

/** The global Response while light. */
export class LightResponse extends NativeResponse {
  constructor(body: ConstructorParameters<typeof Response>[0] = null, init: ResponseInit | undefined = undefined) {
    if (new.target === LightResponse) {
      const light = lightResponse(body, init, undefined);
      if (light !== undefined) return light;
    }
    super(body, init);
  }

  /** Response.json(): light too, where its init lets it be. */
  static override json(data: unknown, init: ResponseInit | undefined = undefined): Response {
    if (init !== undefined && init !== null && typeof init !== 'object') return NativeResponse.json(data, init);
    const text = JSON.stringify(data) as string | undefined;
    if (text === undefined) throw new TypeError('Value is not JSON serializable');
    return lightResponse(text, init, 'application/json') ?? new NativeResponse(text, jsonInit(init));
  }

  // A Response of the platform's (fetch()'s, a clone) is a Response: the class stands for the platform's.
  static override [Symbol.hasInstance](this: unknown, value: unknown): boolean {
    return ordinaryInstanceOf.call(this === LightResponse ? NativeResponse : this, value);
  }

  static readonly [NATIVE] = NativeResponse;
}
Object.defineProperty(LightResponse, 'name', { value: 'Response' });

class Light {
  readonly #parts: LightParts;
  #real: Response | undefined = undefined;

  constructor(parts: LightParts) {
    this.#parts = parts;
  }

  get status(): number {
    return this.#parts.status;
  }

  get ok(): boolean {
    const status = this.#parts.status;
    return status >= 200 && status <= 299;
  }

  get statusText(): string {
    return this.#parts.statusText;
  }

  get headers(): Headers {
    if (this.#real !== undefined) return this.#real.headers;
    const parts = this.#parts;
    return (parts.headers ??= new Headers(parts.fields));
  }

  get type(): Response['type'] {
    return 'default';
  }

  get url(): string {
    return '';
  }

  get redirected(): boolean {
    return false;
  }

  get [LIGHT](): LightParts | undefined {
    return this.#real === undefined ? this.#parts : undefined;
  }

  /**
   * The real Response, made on the first call, with the headers as they are now. Its body stream
   * carries the mode of an event eventResponse() wrote here, as a real one's does (cloudevents/web.ts).
   */
  [REAL](): Response {
    if (this.#real !== undefined) return this.#real;
    const { body, status, statusText, fields, headers } = this.#parts;
    const real = (this.#real = new NativeResponse(body, { status, statusText, headers: headers ?? fields }));
    const written = (this as { [ANSWERED_MODE]?: unknown })[ANSWERED_MODE];
    if (written !== undefined && real.body !== null) (real.body as { [ANSWERED_MODE]?: unknown })[ANSWERED_MODE] = written;
    return real;
  }

  [inspect.custom](depth: number, options: InspectOptions): string {
    const { status, statusText, body } = this.#parts;
    const shown = { status, statusText, headers: this.headers, body };
    return `Response ${inspect(shown, { ...options, depth: options.depth == null ? null : depth - 1 })}`;
  }
}

// A light Response is a Response: `instanceof Response` holds, its constructor is the global
// Response, and what it does not answer itself (body, bodyUsed, the reads, clone()) its real Response does.
standFor(Light.prototype, LightResponse, NativeResponse.prototype, REAL);

/**
 * A light Response of `body` and `init`, or undefined where the platform's own answers (or
 * refuses, with its own error). The init's members are read as the platform reads them (any
 * object's, in the order headers, status, statusText), and checked by its rules.
 */
function lightResponse(body: unknown, init: ResponseInit | undefined, type: string | undefined): Response | undefined {
  if (body !== null && typeof body !== 'string') return undefined;
  if (init !== undefined && init !== null && typeof init !== 'object') return undefined;
  const headers = init?.headers;
  // A member given as null is the platform's to convert (a status of null is 0, a RangeError).
  const status = init?.status === undefined ? 200 : init.status;
  const statusText = init?.statusText === undefined ? '' : init.statusText;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) return undefined;
  // A null body status with a body is the platform's TypeError.
  if (body !== null && (status === 204 || status === 205 || status === 304)) return undefined;
  if (statusText !== '' && (typeof statusText !== 'string' || !REASON.test(statusText))) return undefined;
  const parts: LightParts = { status, statusText, body, fields: {}, headers: undefined, framing: false };
  if (headers !== undefined && !fieldsOf(headers, parts)) return undefined;
  if (body !== null && parts.fields['content-type'] === undefined) parts.fields['content-type'] = type ?? TEXT_TYPE;
  return new Light(parts) as unknown as Response;
}

/**
 * Headers given as a record (an object that is not iterable: its own keys) of text, or a Headers,
 * into `parts`: names lowercased; false for any other form (pairs), or a header the platform
 * would refuse or change (joined, trimmed).
 */
function fieldsOf(headers: NonNullable<ResponseInit['headers']>, parts: LightParts): boolean {
  if (typeof headers !== 'object' || headers === null) return false;
  const fields = parts.fields;
  let framing = false;
  if ((headers as { [Symbol.iterator]?: unknown })[Symbol.iterator] === undefined) {
    const given = headers as Record<string, unknown>;
    const names = Object.keys(given);
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      const value = given[name];
      if (typeof value !== 'string' || !goodValue(value)) return false;
      const lower = goodName(name);
      if (lower === undefined) return false;
      // The same name twice (`Accept` and `accept`) is joined by a Headers: the platform's to do.
      if (i > 0 && fields[lower] !== undefined) return false;
      fields[lower] = value;
      framing ||= isFraming(lower);
    }
  } else {
    // Set-Cookie stays apart in a Headers: an object of text would join them.
    if (!(headers instanceof Headers) || headers.has('set-cookie')) return false;
    for (const [name, value] of headers) {
      if (NOT_ASCII.test(value)) return false;
      fields[name] = value;
      framing ||= isFraming(name);
    }
  }
  parts.framing = framing;
  return true;
}

/** A header name (a token) in lowercase; undefined for a name that is not a token. */
function goodName(name: string): string | undefined {
  const known = GOOD_NAMES.get(name);
  if (known !== undefined) return known;
  if (!TOKEN.test(name)) return undefined;
  const lower = lowercase(name);
  if (GOOD_NAMES.size < GOOD_MOST && name.length <= GOOD_LONGEST) GOOD_NAMES.set(name, lower);
  return lower;
}

/** Whether a Headers keeps a header's value as it is. */
function goodValue(value: string): boolean {
  if (GOOD_VALUES.has(value)) return true;
  if (!VALUE.test(value)) return false;
  if (GOOD_VALUES.size < GOOD_MOST && value.length <= GOOD_LONGEST) GOOD_VALUES.add(value);
  return true;
}

/** A header name in lowercase: the names apps write most often as the same constant each time. */
function lowercase(name: string): string {
  switch (name) {
    case 'Content-Type':
    case 'content-type':
      return 'content-type';
    case 'Cache-Control':
    case 'cache-control':
      return 'cache-control';
    case 'Location':
    case 'location':
      return 'location';
    default:
      return name.toLowerCase();
  }
}

/** Response.json()'s init for the platform's own Response: its Content-Type unless the init gives one. */
function jsonInit(init: ResponseInit | null | undefined): ResponseInit {
  const headers = new Headers(init?.headers);
  if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  return { ...init, headers };
}
