// Where the function contract and faas-js-runtime disagree, funcrun follows the contract; in
// faas-js-runtime compatibility it follows faas-js-runtime, so a function written for it runs as
// it did. Compatibility is on when funcrun is entered under faas-js-runtime's name (installed as
// `faas-js-runtime` by the one-line move, or started by its `faas-js-runtime` binary) unless
// FUNC_COMPAT says otherwise. It is read once at start into this table of plain flags: the
// request path tests a boolean, never the mode.
import { basename, join } from 'node:path';
import { ConfigError, shownValue } from './func-yaml';
import type { LogLevel } from '../log/log';

/** What differs between the two behaviours. Each flag is one row of the migration table. */
export interface Behaviour {
  /** The handler's second argument for a CloudEvent: the event's data (the contract) or the event itself. */
  readonly eventAsArgument: boolean;
  /** `{ headers }` with no body: the contract's 204, or faas-js-runtime's 200 with the whole object as JSON. */
  readonly headersWithoutBodyAsJson: boolean;
  /**
   * `{ statusCode, headers, body }` read as faas-js-runtime reads it: the status as fastify's
   * `reply.code()` takes it (numeric text, a fraction cut; a falsy one is none), headers that are
   * not an object ignored, and an object whose body is undefined sent whole as JSON.
   */
  readonly structuredAsFaasJsRuntime: boolean;
  /** A number or boolean returned directly: the contract's 204, or faas-js-runtime's (falsy 204, else an empty 200). */
  readonly scalarsAsEmpty200: boolean;
  /** The function's answers allow every origin (`Access-Control-Allow-Origin: *`) unless it has `cors()`; errors, probes and metrics do not. */
  readonly corsForEveryOrigin: boolean;
  /**
   * Errors raised once the function ran are answered as text (the message at 4xx), not JSON; the
   * status comes from a numeric `code` only (a `statusCode` alone is a 500), and no headers of
   * the thrown value are sent.
   */
  readonly errorsAsText: boolean;
  /** Error bodies leave out funcrun's error codes (docs/errors.md), as faas-js-runtime's have none. */
  readonly withoutErrorCodes: boolean;
  /** A returned CloudEvent is answered in binary mode always, not in the mode the request came in. */
  readonly eventsAnsweredBinary: boolean;
  /** A CloudEvent returned to a plain HTTP request is answered as its JSON (`application/json`), not as an event. */
  readonly eventsToPlainRequestsAsJson: boolean;
  /**
   * A returned event is written as the SDK's `HTTP.binary` writes it: without a datacontenttype
   * its Content-Type is `application/json; charset=utf-8` (also with no data) and string data goes
   * as it is; the response chain sets no datacontenttype.
   */
  readonly eventsWrittenAsSdk: boolean;
  /** A request is a binary CloudEvent only with a `ce-id` header (the SDK's test); without one it is a plain request. */
  readonly binaryEventsById: boolean;
  /**
   * An event's data is read as faas-js-runtime reads it, not by its content type: binary data
   * parsed only where fastify parses a body (XML, `+json`, CSV arrive as bytes), structured data as
   * the JSON holds it (XML as its text), `data_base64` as a plain `Uint8Array` (the SDK's decoding).
   */
  readonly eventDataAsFaasJsRuntime: boolean;
  /**
   * Answers are `application/json` unless the function says otherwise or returns a string
   * directly: returned bytes and streams too, and a `{ body }` of any kind (a number or `null`
   * body is sent as JSON).
   */
  readonly jsonByDefault: boolean;
  /** `handle` answers `/` only, to GET, HEAD and POST: any other path or method no route claims is fastify's 404. */
  readonly rootOnly: boolean;
  /**
   * Request bodies are parsed only where faas-js-runtime (fastify) parses them: `application/json`
   * (an empty one is a 400), `text/plain` and forms; anything else (XML, `+json`, other `text/*`)
   * reaches the function as bytes.
   */
  readonly fastifyBodyParsers: boolean;
  /** `context.contentType` is the raw Content-Type header (`application/json; charset=utf-8`), not the parsed media type. */
  readonly rawContentType: boolean;
  /** Metric labels exactly as faas-js-runtime prints them (`faas_instance="undefined"` without POD_NAME). */
  readonly faasMetricLabels: boolean;
  /** The log level when none is configured, where it is not the settings table's: faas-js-runtime's is `warn`. */
  readonly defaultLogLevel: LogLevel | undefined;
  /** An info line per answered request unless FUNC_ACCESS_LOG says otherwise, as faas-js-runtime (fastify) logs one. */
  readonly accessLog: boolean;
}

export const COMPAT_MODES = ['faas-js-runtime', 'none'] as const;
/** `faas-js-runtime`, or `none` for funcrun's own behaviour (also when funcrun is entered as faas-js-runtime). */
export type Compat = (typeof COMPAT_MODES)[number];

const CONTRACT: Behaviour = Object.freeze({
  eventAsArgument: false,
  headersWithoutBodyAsJson: false,
  structuredAsFaasJsRuntime: false,
  scalarsAsEmpty200: false,
  corsForEveryOrigin: false,
  errorsAsText: false,
  withoutErrorCodes: false,
  eventsAnsweredBinary: false,
  eventsToPlainRequestsAsJson: false,
  eventsWrittenAsSdk: false,
  binaryEventsById: false,
  eventDataAsFaasJsRuntime: false,
  jsonByDefault: false,
  rootOnly: false,
  fastifyBodyParsers: false,
  rawContentType: false,
  faasMetricLabels: false,
  defaultLogLevel: undefined,
  accessLog: false,
});

const FAAS_JS_RUNTIME: Behaviour = Object.freeze({
  eventAsArgument: true,
  headersWithoutBodyAsJson: true,
  structuredAsFaasJsRuntime: true,
  scalarsAsEmpty200: true,
  corsForEveryOrigin: true,
  errorsAsText: true,
  withoutErrorCodes: true,
  eventsAnsweredBinary: true,
  eventsToPlainRequestsAsJson: true,
  eventsWrittenAsSdk: true,
  binaryEventsById: true,
  eventDataAsFaasJsRuntime: true,
  jsonByDefault: true,
  rootOnly: true,
  fastifyBodyParsers: true,
  rawContentType: true,
  faasMetricLabels: true,
  defaultLogLevel: 'warn',
  accessLog: true,
});

/** The behaviour for a `compat` setting: `none` (or nothing) is funcrun's own. */
export function behaviourOf(compat: Compat | undefined): Behaviour {
  return compat === 'faas-js-runtime' ? FAAS_JS_RUNTIME : CONTRACT;
}

/**
 * `compat` from text (an option, a flag, FUNC_COMPAT): `faas-js-runtime`, or `none` (also
 * `funcrun`); empty is no choice, left to the name funcrun was entered under.
 */
export function parseCompat(value: string, what: string): Compat | undefined {
  const text = value.trim().toLowerCase();
  if (text === '') return undefined;
  if (text === 'none' || text === 'funcrun') return 'none';
  if (text === 'faas-js-runtime') return text;
  throw new ConfigError(`invalid ${what} '${shownValue(value)}': expected faas-js-runtime or none`);
}

/**
 * The name funcrun was entered under, when it is faas-js-runtime's: this copy installed as
 * `node_modules/faas-js-runtime` (the move's one line in package.json, so `require()` in a
 * function's tests finds it too), or `binary`, the command that started the process, is
 * `faas-js-runtime`.
 */
export function enteredAsFaasJsRuntime(binary?: string): boolean {
  return INSTALLED_AS === FAAS_JS_RUNTIME_NAME || (binary !== undefined && basename(binary) === FAAS_JS_RUNTIME_NAME);
}

const FAAS_JS_RUNTIME_NAME = 'faas-js-runtime';
// lib/ is in the package's folder, whose name is the one it was installed under.
const INSTALLED_AS = basename(join(__dirname, '..'));
