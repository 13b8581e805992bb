// The CloudEvents binding: which SDK copy makes events, which mode a request is in and which one
// its answer goes in, the response chain, and recognising a returned event. Reading an event
// strictly is read.ts; writing one back, reply.ts.
import { randomUUID } from '../util/random';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { CloudEvent } from 'cloudevents';
import { brand } from '../util/brand';
import type { MediaType } from '../body/media-type';

type Sdk = typeof import('cloudevents');

/** The SDK events are made with, and what is derived from it once. */
export interface LoadedSdk {
  readonly sdk: Sdk;
  /**
   * The SDK's class for an arriving event (read.ts), serialising it as it arrived: the SDK's
   * toJSON() reformats `time`, which an event that came without one does not have.
   */
  readonly ReceivedEvent: new () => CloudEvent<unknown>;
  /** Names the received event's prototype chain uses (methods, getters): an attribute must not hide one. */
  readonly reserved: ReadonlySet<string>;
  /** The prototypes of the response chain's events (the SDK's CloudEvent's, marked with what the chain wrote): by whether it made the id. */
  readonly made: { readonly id: object; readonly time: object };
}

/**
 * On an event the response chain made, inherited: what funcrun wrote itself, so that writing it as
 * headers need not look for what to encode (reply.ts). 'time': its time and specversion; 'id':
 * its id too (the function gave none).
 */
export const MADE = Symbol('funcrun.cloudevents.made');
export interface Made {
  readonly [MADE]: 'id' | 'time';
}

// One SDK serves the process, so that `context.cloudevent instanceof CloudEvent` holds in the
// function: where the application's copy is, if it has one, is found at the first start
// (useApplicationSdk); the SDK itself is loaded on first use, so that a start, and a plain HTTP
// function, never pay for it.
let sdk: LoadedSdk | { readonly applicationPath: string } | undefined;

/** The SDK, loaded on first use. */
export function cloudevents(): Sdk {
  return loadedSdk().sdk;
}

/**
 * The names an attribute may not take because the event's methods have them: the SDK's once it is
 * loaded, else those of its CloudEvent (version 8) that an attribute name (a-z0-9) could spell, so
 * that what only writes events (eventResponse()) need not load it.
 */
export function reservedNames(): ReadonlySet<string> {
  return sdk !== undefined && !('applicationPath' in sdk) ? sdk.reserved : SDK_METHODS;
}

const SDK_METHODS: ReadonlySet<string> = new Set(['constructor', 'validate', 'emit']);

/** The SDK and what is derived from it, loaded on first use. */
export function loadedSdk(): LoadedSdk {
  if (sdk === undefined || 'applicationPath' in sdk) sdk = derived(applicationSdk(sdk?.applicationPath) ?? (require('cloudevents') as Sdk));
  return sdk;
}

function derived(module: Sdk): LoadedSdk {
  const ReceivedEvent = class ReceivedCloudEvent extends module.CloudEvent<unknown> {
    override toJSON(): Record<string, unknown> {
      const json: Record<string, unknown> = { ...this };
      if (json.data_base64 !== undefined) delete json.data;
      return json;
    }
  } as unknown as new () => CloudEvent<unknown>;
  const reserved = new Set<string>();
  for (let proto = ReceivedEvent.prototype; proto !== null; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) reserved.add(name);
  }
  const mark = (made: Made[typeof MADE]): object => Object.create(module.CloudEvent.prototype as object, { [MADE]: { value: made } }) as object;
  return { sdk: module, ReceivedEvent, reserved, made: { id: mark('id'), time: mark('time') } };
}

/**
 * Events are made with the function's own copy of the SDK when it has one, so that
 * `context.cloudevent instanceof CloudEvent` holds in the function whichever copy npm installed
 * where. Called at start with the function's folder: the copy is looked for in the `node_modules`
 * of that folder and its parents only (not NODE_PATH or global folders), and loaded with the first
 * event, as funcrun's own would be. One SDK serves the process: the first start() decides.
 */
export function useApplicationSdk(folder: string): void {
  if (sdk !== undefined) return;
  for (let dir = resolve(folder); ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', 'cloudevents');
    if (existsSync(join(candidate, 'package.json'))) {
      sdk = { applicationPath: candidate };
      return;
    }
    if (dirname(dir) === dir) return;
  }
}

function applicationSdk(path: string | undefined): Sdk | undefined {
  if (path === undefined) return undefined;
  try {
    const found = require(path) as Partial<Sdk>;
    // Only a copy with the class funcrun builds on (every release since 4.0 has it).
    const Class = found.CloudEvent;
    if (typeof Class === 'function' && typeof Class.prototype.validate === 'function' && typeof Class.prototype.cloneWith === 'function') return found as Sdk;
  } catch {
    // The application has no copy of its own (or one that fails to load): funcrun's.
  }
  return undefined;
}

export type Mode = 'binary' | 'structured' | 'batch';

/** A request's headers by lowercase name, as node gives them (`IncomingHttpHeaders` is one). */
export interface EventHeaders {
  readonly 'content-type'?: string;
  readonly [name: string]: string | string[] | undefined;
}

export const STRUCTURED = 'application/cloudevents+json';
export const BATCH = 'application/cloudevents-batch+json';
/** The Content-Type funcrun writes a structured event under (reply.ts). */
export const STRUCTURED_UTF8 = `${STRUCTURED}; charset=utf-8`;

/**
 * The mode an answer's headers carry an event in, told by their Content-Type: structured for
 * `application/cloudevents+json` (any case, with parameters or none), else binary. The one place
 * that tells, for funcrun's answers (respond.ts, eventResponse(), a replay's) and for a Response
 * whose headers may have changed since (fetch/web-response.ts). funcrun's own is matched without a scan.
 */
export function writtenMode(contentType: unknown): 'binary' | 'structured' {
  if (contentType === STRUCTURED_UTF8) return 'structured';
  const text = String(contentType);
  return text.length >= STRUCTURED.length && STRUCTURED_TYPE.test(text) ? 'structured' : 'binary';
}
// Anchored, over distinct characters: linear on any header.
const STRUCTURED_TYPE = /^application\/cloudevents\+json\s*(;|$)/i;
/** Whether `value` is a CloudEvents version funcrun reads and writes: compared, where a Set would hash the arriving text. */
export function isSpecVersion(value: unknown): value is '1.0' | '0.3' {
  return value === '1.0' || value === '0.3';
}

// RFC 3986 characters, percent escapes whole: a URI reference (an event's source).
export const URI_REFERENCE = /^(?:[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})+$/;

/** Whether `source` is a URI reference (not empty). */
export function isUriReference(source: string): boolean {
  return URI_REFERENCE.test(source);
}

/**
 * The content mode of a request, or undefined when it is not a CloudEvent. `byId`: binary mode
 * only with `ce-id`, as the SDK tells (faas-js-runtime's way); else any of the required
 * attributes' headers makes it binary, and a missing one is then refused by name.
 */
export function detectMode(headers: EventHeaders, media: MediaType | undefined, byId = false): Mode | undefined {
  if (media !== undefined && media.type.startsWith('application/cloudevents')) {
    return media.type.startsWith('application/cloudevents-batch') ? 'batch' : 'structured';
  }
  if (byId) return headers['ce-id'] !== undefined ? 'binary' : undefined;
  if (headers['ce-specversion'] !== undefined || headers['ce-id'] !== undefined || headers['ce-type'] !== undefined || headers['ce-source'] !== undefined) {
    return 'binary';
  }
  return undefined;
}

/**
 * The mode a returned event is answered in: the request's (binary for a plain HTTP request), or
 * binary always (faas-js-runtime's way, with `FUNC_COMPAT`). A batch is answered as a batch.
 */
export function replyMode(requestMode: Mode | undefined, alwaysBinary: boolean): Mode | undefined {
  return alwaysBinary && requestMode === 'structured' ? 'binary' : requestMode;
}

/** Defaults for events made by `context.cloudEventResponse(data)`. */
export interface ResponseDefaults {
  source: string;
  type: string;
  /** No datacontenttype on the event, as the SDK's CloudEvent has none unless given (faas-js-runtime's chain). */
  untyped?: boolean;
  /** The answers' `time`: one clock per set of defaults (a server's); without one, each answer makes its own text. */
  readonly clock?: EventClock;
  /** Events answered in binary mode whatever the request's (faas-js-runtime's way, replyMode()): eventResponse()'s without a mode too. */
  readonly binaryAnswers?: boolean;
}

/** The defaults for a function named `name`: source `/<name>`, type `dev.funcrun.response`. */
export function responseDefaults(name: string, untyped = false, binaryAnswers = false): ResponseDefaults {
  return { source: `/${name}`, type: 'dev.funcrun.response', untyped, clock: new EventClock(), binaryAnswers };
}

/**
 * The time now as an event's `time` text. V8's `toISOString()` formats with printf, some 7,000
 * instructions, more than the rest of an answer's event: the text up to the millisecond is made
 * once a second, and each answer adds its millisecond. The same text as `toISOString()` for every
 * instant (before 1970 and past year 9999 too): the second's own text is `toISOString()`'s.
 */
export class EventClock {
  #second = Number.NaN;
  #prefix = '';

  now(): string {
    const now = Date.now();
    // A Date.now() a test replaced may give anything: toISOString() says what it makes of it.
    if (!Number.isSafeInteger(now)) return new Date(now).toISOString();
    const second = Math.floor(now / 1000);
    const ms = now - second * 1000;
    if (second !== this.#second) {
      // "2026-11-28T21:34:49.000Z" without its "000Z".
      this.#prefix = new Date(second * 1000).toISOString().slice(0, -4);
      this.#second = second;
    }
    return this.#prefix + (ms < 10 ? '00' : ms < 100 ? '0' : '') + ms + 'Z';
  }
}

/**
 * Marks the response chain's type (types only, nothing at run time), so a handler's return type
 * can tell the chain from an object sent as JSON.
 */
export declare const responseChain: unique symbol;

/** The function contract's response chain: `context.cloudEventResponse(data).type(t).source(s).response()`. */
export class CloudEventResponse<T = unknown> {
  declare readonly [responseChain]: T;
  #attributes: Record<string, unknown>;

  readonly #untyped: boolean;
  readonly #clock: EventClock | undefined;

  constructor(data: T, defaults: ResponseDefaults) {
    this.#attributes = { source: defaults.source, type: defaults.type, specversion: '1.0', data };
    this.#untyped = defaults.untyped === true;
    this.#clock = defaults.clock;
  }
  id(id: string): this {
    this.#attributes.id = id;
    return this;
  }
  source(source: string): this {
    this.#attributes.source = source;
    return this;
  }
  type(type: string): this {
    this.#attributes.type = type;
    return this;
  }
  /** `undefined` (or empty) leaves 1.0, as the SDK's CloudEvent does with no specversion. */
  version(version: string): this {
    if (version !== undefined && version !== null && version !== '') this.#attributes.specversion = version;
    return this;
  }
  /** The event: a new id unless one was set, specversion 1.0 unless set, the time now. */
  response(): CloudEvent<T> {
    const attributes = this.#attributes;
    const { data, source, type, specversion } = attributes;
    // Checked here rather than by the SDK's constructor, which would validate its schema per event.
    if (typeof type !== 'string' || type === '') throw new TypeError('cloudEventResponse(): type must be a non-empty string');
    if (typeof source !== 'string' || !isUriReference(source)) throw new TypeError('cloudEventResponse(): source must be a URI reference');
    if (!isSpecVersion(specversion)) throw new TypeError('cloudEventResponse(): version must be 1.0 or 0.3');
    if (attributes.id !== undefined && (typeof attributes.id !== 'string' || attributes.id === '')) {
      throw new TypeError('cloudEventResponse(): id must be a non-empty string (or left out, for a new one)');
    }
    const { made } = loadedSdk();
    const event = Object.create(attributes.id === undefined ? made.id : made.time) as Record<string, unknown>;
    event.id = attributes.id ?? randomUUID();
    event.time = this.#clock?.now() ?? new Date().toISOString();
    event.type = type;
    event.source = source;
    event.specversion = specversion;
    if (data !== undefined) {
      // Bytes in any view (a Buffer is one), as the SDK's CloudEvent reads them.
      const binary = data instanceof Uint8Array;
      if (!this.#untyped) event.datacontenttype = binary ? 'application/octet-stream' : 'application/json';
      event.data = data;
      if (binary) event.data_base64 = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64');
    }
    return Object.freeze(event) as unknown as CloudEvent<T>;
  }
}
brand(CloudEventResponse, 'CloudEventResponse');

/**
 * The CloudEvent a handler returned, or undefined when the value is not one. Accepts the SDK's
 * instances (also from another copy of the SDK in the function's own node_modules) and the
 * response chain, which counts as if `response()` had been called.
 */
export function asCloudEvent(value: object): CloudEvent<unknown> | undefined {
  if (value instanceof CloudEventResponse) return value.response();
  // The SDK in use, if loaded: an instance of it can only have been made after it was.
  if (sdk !== undefined && 'sdk' in sdk && value instanceof sdk.sdk.CloudEvent) return value;
  // Another copy of the SDK: recognised by its class, found on the prototype chain. Parsed data
  // (plain objects, whatever own `constructor` key it carries) never matches.
  if (madeBy(value, 'CloudEvent') && typeof (value as { specversion?: unknown }).specversion === 'string') {
    return new (cloudevents().CloudEvent)({ ...value });
  }
  return undefined;
}

function madeBy(value: object, name: string): boolean {
  for (let proto = Object.getPrototypeOf(value); proto !== null && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    const ctor = Object.getOwnPropertyDescriptor(proto, 'constructor')?.value as { name?: unknown } | undefined;
    if (typeof ctor === 'function' && ctor.name === name) return true;
  }
  return false;
}
