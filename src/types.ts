// The types function authors use, with faas-js-runtime's names so TypeScript functions move
// over unchanged.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { CloudEvent, Message } from 'cloudevents';
import type { Context } from './context';
import type { Logger, LogLevel } from './log/log';
import type { CloudEventResponse, responseChain } from './cloudevents/cloudevent';
import type { ErrorBody } from './errors';
import type { Outcome } from './cloudevents/outcomes';
import type { EventDeclaration } from './event-types';
import type { BodyStream } from './body/body-stream';
import type { UploadedFile } from './uploads/uploads';

export type { Context, Logger, LogLevel, CloudEventResponse, CloudEvent, ErrorBody, BodyStream, UploadedFile };

/** Response headers: a repeated header is an array. */
export type ResponseHeaders = Record<string, string | string[] | number>;

/**
 * A response spelled out: status, headers and body, and no other key (funcrun would ignore it:
 * `{ statusCod: 201, body }` is a 200). With no body and no status, 204. A type literal, not an
 * interface, so that a value of this type is also an ExactStructuredReturn, as handlers return it.
 */
export type StructuredReturn = {
  statusCode?: number;
  headers?: ResponseHeaders;
  body?: ResponseBody | number | boolean;
};

export type ResponseBody = string | object | Buffer | Uint8Array;

declare const misspelt: unique symbol;
/** The type of a misspelt key of a returned object: no value has it, and the error names the key meant. */
export interface DidYouMean<Key extends string> {
  readonly [misspelt]: Key;
}

/** The type of any other key of a structured return: no value has it, and the error says why. */
export interface NotAStructuredReturnKey {
  readonly [misspelt]: 'a structured return has statusCode, headers and body only';
}

// A structured return's other keys. TypeScript checks no excess keys of an arrow function's
// returned object literal (`const handle: HTTPFunction = () => ({ ... })`), so they are refused
// by index signatures whose key patterns match every key but the three: a pattern per place a
// key can leave them (`${'a' | 'c' | ...}${string}`, `s${'a' | 'b' | ...}${string}`, ...), over
// printable ASCII, and the keys that stop short of one (`header`, `statusCod`), each with the
// key meant. Kept apart from StructuredReturn, where an interface extending it or a mapped type
// of it (`Partial<StructuredReturn>`) would be checked against these thousands of signatures
// pairwise, which takes tsc 30 s or more: a value of such a type has only its own keys to check.
type Characters<Text extends string, Found extends string = never> = Text extends `${infer C}${infer Rest}` ? Characters<Rest, Found | C> : Found;
type Printable = Characters<' !"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~'>;
/** The keys that begin with Prefix and then leave Rest, or go on past its end. */
type Leaving<Prefix extends string, Rest extends string> = Rest extends `${infer C}${infer More}`
  ? `${Prefix}${Exclude<Printable, C>}${string}` | Leaving<`${Prefix}${C}`, More>
  : `${Prefix}${Printable}${string}`;
/** The keys that stop short of Key: its beginnings. */
type ShortOf<Key extends string, Prefix extends string = ''> = Key extends `${Prefix}${infer C}${string}`
  ? (Prefix extends '' ? never : Prefix) | ShortOf<Key, `${Prefix}${C}`>
  : never;
type OtherKey = `${Exclude<Printable, 's' | 'h' | 'b'>}${string}` | Leaving<'s', 'tatusCode'> | Leaving<'h', 'eaders'> | Leaving<'b', 'ody'>;
type OtherKeys = { readonly [K in OtherKey]?: NotAStructuredReturnKey };
type Truncated<Key extends string> = { readonly [K in ShortOf<Key>]?: DidYouMean<Key> };

/**
 * A structured return as a handler returns it: StructuredReturn, and no other key. An object
 * literal or a value of a type literal (`StructuredReturn`, `Partial<StructuredReturn>`) is one
 * when its keys are the three; a value of an interface is not (it has no index signature to check).
 */
export type ExactStructuredReturn = StructuredReturn & OtherKeys & Truncated<'statusCode'> & Truncated<'headers'> & Truncated<'body'>;

/**
 * Any other object a handler returns: data sent as JSON. An object with `headers` or `body` is a
 * structured return, never this (its keys are StructuredReturn's); one with a `statusCode` alone
 * is data sent with that status (faas-js-runtime's `{ statusCode: 451, statusMessage }`), so its
 * other keys are free. Buffers, byte arrays and streams are objects without these keys, so they
 * are ReturnedObjects too.
 */
export interface ReturnedObject {
  // `any`, not `unknown`: only an `any` index signature admits interfaces and class instances,
  // which TypeScript gives no implicit index signature. For the same reason data keys cannot be
  // matched by a pattern (`[k: \`statusC${string}\`]: never` would refuse every interface), so
  // misspellings of a lone `statusCode` are listed one by one: those that are hardly ever data.
  [key: string]: any;
  statusCode?: number;
  headers?: never;
  body?: never;
  /** @deprecated misspelt: `statusCode` */
  statusCod?: DidYouMean<'statusCode'>;
  /** @deprecated misspelt: `statusCode` */
  statuscode?: DidYouMean<'statusCode'>;
  /** @deprecated misspelt: `statusCode` */
  StatusCode?: DidYouMean<'statusCode'>;
  /** @deprecated misspelt: `statusCode` */
  status_code?: DidYouMean<'statusCode'>;
  // Not data: a promise (checked as the value it resolves to), an SDK CloudEvent (told by its
  // method, as funcrun tells it by its class) and the response chain each have a member of
  // their own, where an event's data type is checked.
  then?: never;
  validate?: never;
  [responseChain]?: never;
}

/**
 * A returned CloudEvent with data of type T: the SDK's CloudEvent less its index signature for
 * extensions, which would make every wrong object literal's error be about CloudEvent. An object
 * without the SDK's `validate` is no event to funcrun but data, sent as JSON.
 */
export interface ReturnedEvent<T = unknown> extends Pick<CloudEvent<T>, 'specversion' | 'id' | 'type' | 'source' | 'data' | 'validate'> {}

/**
 * A returned SDK `Message` (`HTTP.binary(event)`), a structured return too. An interface, so it
 * cannot be held to the keys as an object literal is: a literal with both `headers` and `body`
 * fits it whatever its other keys, unless it has a `statusCode`.
 */
export type ReturnedMessage = Message & { statusCode?: never };

/** What a handler may return, an event carrying data of type T. */
export type Returned<T = unknown> =
  | Outcome
  | ExactStructuredReturn
  | ReturnedObject
  | ReturnedEvent<T>
  | CloudEventResponse<T>
  | ReturnedMessage
  // A web Response, sent as it says: its status, Headers and body (a ReadableStream, streamed).
  | Response
  | string
  | number
  | boolean
  | null
  | undefined
  | void;

export type HTTPFunctionReturn = Returned;

/** A function called for plain HTTP requests: `(context, body)`. */
export interface HTTPFunction {
  (context: Context, body?: any): HTTPFunctionReturn | Promise<HTTPFunctionReturn>;
  /** Take the request body as a stream, unread (`streamed()` sets it). */
  streamBody?: boolean;
}

/** faas-js-runtime's name for what a CloudEvent function returns: R is the returned event's data type. */
export type CloudEventFunctionReturn<R = unknown> = Returned<R> | Promise<Returned<R>>;

/**
 * A function called for CloudEvents: `(context, data)`, the event itself is `context.cloudevent`.
 * `I` is the incoming event's data type (of `data` and `context.cloudevent.data`), `R` the
 * returned event's. With FUNC_COMPAT=faas-js-runtime the second argument is the whole event,
 * which these types cannot know: type it yourself there (`CloudEvent<I>`). The defaults stay
 * loose (`any`), so a handler written for faas-js-runtime, `(context, cloudevent?: CloudEvent<unknown>)`,
 * still is a CloudEventFunction.
 */
export interface CloudEventFunction<I = any, R = unknown> {
  (context: Context<I>, data?: I): CloudEventFunctionReturn<R>;
}

/**
 * What the server invokes per request: an HTTPFunction or a CloudEventFunction of any data type.
 * One signature rather than their union, so that an unannotated `(context, data) => ...` still
 * gets its parameters' types (TypeScript types them from a union only when its members'
 * parameters are identical).
 */
export interface Invokable {
  (context: Context<any>, data?: any): HTTPFunctionReturn | Promise<HTTPFunctionReturn>;
  /** Take the request body as a stream, unread (`streamed()` sets it). */
  streamBody?: boolean;
}

/** A function that reads its request body as a stream (`streamed()` makes one). */
export interface StreamingFunction {
  (context: Context, body: BodyStream): HTTPFunctionReturn | Promise<HTTPFunctionReturn>;
  readonly streamBody: true;
}

/** faas-js-runtime's name for what any handler returns. */
export type FunctionReturn = CloudEventFunctionReturn;

/** faas-js-runtime's `Config`: the settings its start() resolved. */
export interface Config {
  logLevel: LogLevel;
  port: number;
  includeRaw: boolean;
}

/**
 * A named function (the function contract's Java variant): `(input, context) => output`. `inputSchema` types
 * its input (JSON Schema); `cloudEvent: true` makes it take CloudEvents only, receiving the whole
 * event; `trigger` is the `ce-type` it answers when that is not its name.
 */
export interface NamedFunction {
  (input: any, context: Context): unknown;
  inputSchema?: object;
  cloudEvent?: boolean;
  trigger?: string;
  /** Take the body of `POST /<name>` as a stream, unread: the input is then a BodyStream. */
  streamBody?: boolean;
}

/** What `authorize` sees of a request: everything but its body, which has not been read. */
export interface RequestInfo {
  method: string;
  /** The path, without the query string. */
  path: string;
  headers: IncomingMessage['headers'];
  query: Record<string, string | string[]>;
}

/** A liveness or readiness check: false or a throw means not healthy (503). `path` moves the probe. */
export interface HealthCheck {
  /**
   * The check: `false`, a throw or a rejection fails it; a string is the probe's answer. It may
   * also answer through `reply`, as a fastify handler does under faas-js-runtime.
   */
  (request: ProbeRequest, reply: ProbeReply): unknown;
  path?: string;
}

/** The probe's request, as faas-js-runtime's fastify hands it to a check. */
export interface ProbeRequest {
  readonly method: string;
  /** The target as sent, query included. */
  readonly url: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly query: Record<string, string | string[]>;
  /** Node's request. */
  readonly raw: IncomingMessage;
}

/** The reply a check may answer through, as fastify's: a status, headers and what it sends. */
export interface ProbeReply {
  statusCode: number;
  readonly sent: boolean;
  code(status: number): ProbeReply;
  status(status: number): ProbeReply;
  header(name: string, value: string | number): ProbeReply;
  headers(values: Record<string, string | number>): ProbeReply;
  type(contentType: string): ProbeReply;
  getHeader(name: string): string | undefined;
  send(payload?: unknown): ProbeReply;
}

/** A CORS origin: an exact origin such as `https://example.com`, `*` for any, or a pattern. */
export type CorsOrigin = string | RegExp;

/**
 * What a fetch handler's `env` holds: the process environment (`process.env`), as a Workers
 * `env` holds the Worker's variables.
 */
export type FetchEnv = Record<string, string | undefined>;

/** A fetch handler's third argument: the request's own services, in the shape Workers code expects. */
export interface FetchContext {
  /**
   * Work to finish after the answer, as `context.waitUntil`: it counts as in flight (a SIGTERM's
   * drain waits for it), and its failure is logged with the request's reqId.
   */
  waitUntil(promise: PromiseLike<unknown>): void;
  /** Kept for Workers code: does nothing, as there is no origin to pass the request through to. */
  passThroughOnException(): void;
  /** The request's logger: its lines carry `reqId`. */
  readonly log: Logger;
  /** The request's id, as its log lines carry it. */
  readonly reqId: number;
  /** Workers' `ctx.props` (what a binding passes on): always empty here; typed so that a Hono app is a FetchHandler. */
  readonly props: Readonly<Record<string, unknown>>;
}

/**
 * A web-standard handler, the shape of a Hono app, a Cloudflare Worker, Bun's and Deno's servers:
 * every request (but funcrun's probes and metrics) is handed to `fetch` as a WHATWG `Request`, and
 * the `Response` it returns is sent, its body streamed as it is produced. It may throw `retry()`
 * or `drop()` instead: the event's outcome, answered 503 (or 429) with Retry-After, or 204. (Typed
 * to return a Response alone, so that a test's `(await app.fetch(...)).json()` compiles.)
 */
export interface FetchHandler {
  fetch(request: Request, env: FetchEnv, ctx: FetchContext): Response | Promise<Response>;
}

/** The exported module of a function project. */
export interface Function {
  /**
   * A fetch handler's `fetch`, with the handler as `this` (the loader binds it): a module whose
   * export, or default export, has `fetch` and no `handle` or `functions` is one (a Hono app).
   */
  fetch?: FetchHandler['fetch'];
  /**
   * Takes every request no route matches: an Invokable, or with `events` an EventHandler.
   * A method, not an `Invokable` property, so that its parameters are compared both ways: an
   * EventHandler's context, whose `cloudevent` is always there and typed per event type, is
   * narrower than the `Context<any>` an Invokable takes, and strict function types refuse that.
   */
  handle?(context: Context<any>, data?: any): HTTPFunctionReturn | Promise<HTTPFunctionReturn>;
  /** `'METHOD /path/:param'` to a handler with the same contract as `handle`. */
  routes?: Record<string, Invokable>;
  /** Named functions, served as `POST /<name>`, `GET /<name>?...` and CloudEvents by type. */
  functions?: Record<string, NamedFunction>;
  /**
   * The event contracts of `handle` (or of `functions`, or of `fetch`: checked before it runs), made
   * with `defineEvents`: per CloudEvent `type`, the schema its data must meet.
   */
  events?: EventDeclaration;
  /** Runs before the server listens, with the runtime's logger; may be async. A throw stops the start. */
  init?: (context: { log: Logger }) => unknown;
  /** Runs after the server has stopped; may be async. */
  shutdown?: () => unknown;
  liveness?: HealthCheck;
  readiness?: HealthCheck;
  logLevel?: LogLevel;
  /** The origins allowed to call the function from a browser. Called once at start. */
  cors?: () => CorsOrigin[];
  /**
   * Runs for every request but the probes, before its body is read (and before a 404 or 405):
   * return `false` to refuse it (403), or throw (an error with a `statusCode` such as 401, and
   * `headers`). `/metrics` is covered too.
   */
  authorize?: (request: RequestInfo) => boolean | void | Promise<boolean | void>;
  /**
   * Shapes the JSON body of every error response of this function (a thrown error, 404, 405,
   * 413, malformed data): gets funcrun's body, `{ statusCode, error, message, ... }` (generic at
   * 5xx), and the thrown value; returns the body to send.
   */
  errorBody?: (body: ErrorBody, thrown: unknown) => unknown;
}

export type { IncomingMessage };
