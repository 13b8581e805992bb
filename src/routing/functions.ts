// Named functions: the Java variant's (Funqy) wire contract for a module that exports `functions`.
// `POST /<name>` with a JSON body, `GET /<name>?query`, and CloudEvents posted to `/`, routed by
// `ce-type`. Everything here is built once at start: schemas compiled, routes and the ce-type
// table made; a request only looks things up.
import type { CloudEvent } from 'cloudevents';
import { asCloudEvent, CloudEventResponse } from '../cloudevents/cloudevent';
import type { Context } from '../context';
import { MAX_JSON_DEPTH } from '../body/json';
import { runtimeError } from '../errors';
import { isPartOf } from '../body/provenance';
import { answeredAsItIs, discard, Prepared } from '../respond';
import { HANDLER_THIS } from '../invocation';
import { bodyKind, parseMediaType } from '../body/media-type';
import { Outcome } from '../cloudevents/outcomes';
import { Readable } from 'node:stream';
import { JSON_TYPE } from '../send';
import { compile, createAjv, listViolations, quoteName, type Check } from './schema';
import type { Function as FunctionModule, HTTPFunctionReturn, Invokable, NamedFunction } from '../types';

type Ajv = import('ajv').default;
type Schema = Record<string, unknown>;

export interface NamedRoute {
  method: string;
  path: string;
  handler: Invokable;
  /** The function reads its body as a stream (POST /<name> only). */
  streamBody: boolean;
  /** On `/`: throws the answer to an event no one function takes (404, 409), for a batch to refuse before any event runs. */
  routeEvent?: (event: CloudEvent<unknown>) => void;
}

const NAME = /^[A-Za-z0-9._~-]+$/;

/** Checks the `functions` export once at start; throws naming what is wrong. */
export function checkFunctions(functions: unknown, fail: (message: string) => never): void {
  if (functions === null || typeof functions !== 'object') fail(`'functions' must be an object of name to function`);
  for (const [name, fn] of Object.entries(functions as Record<string, unknown>)) {
    if (!NAME.test(name) || name === '.' || name === '..')
      fail(`functions['${name}']: a name is a path segment: letters, digits, '.', '_', '~' and '-' (not '.' or '..', which a URL resolves away)`);
    if (typeof fn !== 'function') fail(`functions['${name}'] must be a function`);
    const { inputSchema, cloudEvent, trigger, streamBody } = fn as NamedFunction;
    if (inputSchema !== undefined && (inputSchema === null || typeof inputSchema !== 'object'))
      fail(`functions['${name}'].inputSchema must be a JSON Schema object`);
    if (cloudEvent !== undefined && typeof cloudEvent !== 'boolean') fail(`functions['${name}'].cloudEvent must be true or false`);
    if (trigger !== undefined && (typeof trigger !== 'string' || trigger === '')) fail(`functions['${name}'].trigger must be a CloudEvent type`);
    if (streamBody !== undefined && typeof streamBody !== 'boolean') fail(`functions['${name}'].streamBody must be true or false`);
    // A stream is bytes as they come: no schema can check it, and an event's data is read already.
    if (streamBody === true && inputSchema !== undefined) fail(`functions['${name}']: a function that streams its body has no inputSchema`);
    if (streamBody === true && (cloudEvent === true || trigger !== undefined))
      fail(`functions['${name}']: a function that streams its body takes no CloudEvents`);
  }
}

/**
 * The routes that serve `module.functions`: GET and POST `/<name>` for each, and `/` for
 * CloudEvents routed by type. With a `handle` beside them, requests to `/` that are not such
 * events go to `handle`.
 */
export function namedRoutes(module: FunctionModule): NamedRoute[] {
  const functions = Object.entries(module.functions ?? {});
  if (functions.length === 0) return [];
  const ajv = functions.some(([, fn]) => fn.inputSchema !== undefined) ? createAjv() : undefined;
  const invokers = new Map<string, Invokable>();
  const byType = new Map<string, string[]>();
  for (const [name, fn] of functions) {
    invokers.set(name, namedInvoker(name, fn, ajv));
    // A function that streams its body is called by POST /<name> only, never for an event.
    if (fn.streamBody === true) continue;
    for (const type of new Set([name, fn.trigger ?? name])) byType.set(type, [...(byType.get(type) ?? []), name]);
  }
  const fallback = module.handle as Invokable | undefined;
  if (fallback?.streamBody === true) throw new Error('handle streams its body: beside named functions it shares /, where they read CloudEvents');
  const dispatch: Invokable = (context, data) => {
    const event = context.cloudevent;
    if (event === undefined || context.method !== 'POST') {
      if (fallback !== undefined) return fallback(context, data);
      throw runtimeError('FUNCRUN_EVENT_REQUIRED', 'POST / takes a CloudEvent (binary or structured), routed by its type; call a function by POST /<name>');
    }
    const names = byType.get(event.type) ?? [];
    if (names.length === 0 && fallback !== undefined) return fallback(context, data);
    return invokers.get(functionFor(event))!(context, data);
  };
  /** The one function an event's type routes to; else the 409 or 404 it is answered with. */
  const functionFor = (event: CloudEvent<unknown>): string => {
    const names = byType.get(event.type) ?? [];
    if (names.length > 1) throw runtimeError('FUNCRUN_AMBIGUOUS_EVENT', `ce-type ${quoteName(event.type)} matches more than one function: ${names.join(', ')}`);
    if (names.length === 0) throw runtimeError('FUNCRUN_NO_FUNCTION_FOR_EVENT', `no function for ce-type ${quoteName(event.type)}`);
    return names[0];
  };
  // A batch's events are routed before any runs (invocation.ts batch()): one without its function refuses the batch, as an invalid one does.
  const routeEvent = fallback === undefined ? (event: CloudEvent<unknown>) => void functionFor(event) : undefined;
  const routes: NamedRoute[] = [{ method: fallback === undefined ? 'POST' : '*', path: '/', handler: dispatch, streamBody: false, routeEvent }];
  for (const [name, handler] of invokers) {
    const streamBody = module.functions![name].streamBody === true;
    routes.push({ method: 'GET', path: `/${name}`, handler, streamBody: false }, { method: 'POST', path: `/${name}`, handler, streamBody });
  }
  return routes;
}

function namedInvoker(name: string, fn: NamedFunction, ajv: Ajv | undefined): Invokable {
  const schema = fn.inputSchema as Schema | undefined;
  const checkJson = schema && ajv ? invalidInput(compile(ajv, schema, false)) : undefined;
  // A JSON Schema describes JSON values: bytes (a Buffer is an object with a key per byte) are refused.
  // So is any other body that is not JSON (XML read as a Document, a form, text): told by its media type.
  const checkBody =
    checkJson &&
    ((input: unknown, mediaType: string | undefined) => {
      if (ArrayBuffer.isView(input) || (input !== undefined && mediaType !== undefined && bodyKind(parseMediaType(mediaType)) !== 'json'))
        throw runtimeError(
          'FUNCRUN_BYTES_NOT_ACCEPTED',
          `function '${name}' takes JSON input described by its schema, not ${mediaType === undefined ? 'bytes' : quoteName(mediaType)}`,
        );
      checkJson(input);
    });
  // Query values are text: with a schema they are coerced to its types (and a single value to a list).
  const checkQuery = schema && ajv ? invalidInput(compile(ajv, schema, true)) : undefined;
  return async (context: Context, data: unknown) => {
    const event = context.cloudevent;
    let input: unknown;
    if (event !== undefined) {
      input = fn.cloudEvent ? event : data;
      checkBody?.(fn.cloudEvent ? event.data : data, event.datacontenttype);
    } else if (fn.cloudEvent) {
      throw runtimeError('FUNCRUN_EVENT_REQUIRED', `function '${name}' takes CloudEvents only: POST one to / with ce-type '${fn.trigger ?? name}'`);
    } else if (context.method === 'POST') {
      input = data;
      checkBody?.(input, headerText(context.headers['content-type']));
    } else {
      input = queryInput(context.query, schema);
      checkQuery?.(input);
    }
    let output: unknown;
    try {
      output = await fn.call(HANDLER_THIS, input, context);
    } catch (err) {
      // The input (made here from the query, so the server cannot know it) thrown back is a
      // failure, not a status and headers of the client's choosing.
      if (err !== null && typeof err === 'object' && (isPartOf(err, { data: input }) || carriesInput(err, input)))
        throw new Error(`function '${name}' threw its own input`);
      throw err;
    }
    // retry() and drop() are answered as from handle: by the request path, logged with the event.
    if (output instanceof Outcome) return output;
    return event === undefined ? httpOutput(output) : eventOutput(name, output, event);
  };
}

/** The check, throwing a 400 that names every violation. */
function invalidInput(check: Check): (input: unknown) => void {
  return (input) => {
    const violations = check(input);
    if (violations !== undefined) throw runtimeError('FUNCRUN_INVALID_INPUT', `invalid input: ${listViolations(violations)}`, { details: { violations } });
  };
}

// An error whose `headers` are (part of) the input: the client would choose the answer's headers.
function carriesInput(err: object, input: unknown): boolean {
  try {
    const headers = (err as { headers?: unknown }).headers;
    return headers !== null && typeof headers === 'object' && isPartOf(headers, { data: input });
  } catch {
    return true;
  }
}

function httpOutput(output: unknown): HTTPFunctionReturn {
  if (output === undefined) return undefined;
  // Bytes in any view, node and web streams, a Response and what one is made of: answered as handle's are (respond.ts).
  if (output instanceof Readable || (output !== null && typeof output === 'object' && answeredAsItIs(output))) return output;
  if (output !== null && typeof output === 'object' && asCloudEvent(output) !== undefined) return output;
  // Everything else is JSON, strings included: "HELLO" answers "\"HELLO\"", as Funqy does.
  // Made here once, as the answer itself, rather than as a return value respond.ts reads again.
  return new Prepared({ status: 200, headers: { 'content-type': JSON_TYPE }, body: JSON.stringify(output) ?? 'null' });
}

function eventOutput(name: string, output: unknown, request: CloudEvent<unknown>): HTTPFunctionReturn {
  if (output === undefined) return undefined;
  if (output instanceof Readable) {
    discard(output);
    throw new Error(`function '${name}' answered an event with a stream: an event carries data, not a stream`);
  }
  if (output !== null && typeof output === 'object' && asCloudEvent(output) !== undefined) return output;
  // Made as every answered event is: a fresh id, the time now, its data's content type.
  return new CloudEventResponse(output, { source: name, type: `${name}.output`, untyped: false }).version(request.specversion).response();
}

/**
 * The query string as the input object, Funqy's way: `a.b=1` nests, a repeated key is a list,
 * and an index segment (`kids.1.first=Buffy`) makes a list of objects, in index order. With a
 * schema, an object the schema declares an object keeps its numeric keys (a map).
 */
export function queryInput(query: Record<string, string | string[]>, schema?: Schema): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    const path = key.split('.');
    // The same bound as JSON bodies: deeper input could not even be serialised back.
    if (path.length > MAX_JSON_DEPTH) throw runtimeError('FUNCRUN_INVALID_QUERY', `query parameter names nest deeper than ${MAX_JSON_DEPTH} levels`);
    if (path.some((part) => part === '' || part === '__proto__' || part === 'constructor' || part === 'prototype')) {
      throw runtimeError('FUNCRUN_INVALID_QUERY', `invalid query parameter name ${quoteName(key)}`);
    }
    let node = root;
    // Own properties only: `toString` or `valueOf` are ordinary names, not Object.prototype's.
    for (const part of path.slice(0, -1)) {
      const next = Object.hasOwn(node, part) ? node[part] : undefined;
      if (next === undefined) node = node[part] = {} as Record<string, unknown>;
      else if (typeof next === 'object' && next !== null && !Array.isArray(next)) node = next as Record<string, unknown>;
      else
        throw runtimeError(
          'FUNCRUN_INVALID_QUERY',
          `query parameter ${quoteName(key)} conflicts with ${quoteName(path.slice(0, path.indexOf(part) + 1).join('.'))}`,
        );
    }
    const last = path[path.length - 1];
    if (Object.hasOwn(node, last)) throw runtimeError('FUNCRUN_INVALID_QUERY', `query parameter ${quoteName(key)} conflicts with another one`);
    node[last] = value;
  }
  return toLists(root, schema) as Record<string, unknown>;
}

function toLists(value: unknown, schema: Schema | undefined, root: Schema | undefined = schema): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  // The schemas that describe this value: the one given, its local $ref followed, and its allOf, anyOf and oneOf branches.
  const shapes = schemasOf(schema, root);
  const numeric = keys.length > 0 && keys.every((k) => /^\d+$/.test(k));
  if (numeric && !shapes.some(declaresObject)) {
    const items = shapes.find((shape) => isSchema(shape.items))?.items as Schema | undefined;
    return keys.sort((a, b) => Number(a) - Number(b)).map((k) => toLists(object[k], items, root));
  }
  for (const key of keys) object[key] = toLists(object[key], childSchema(shapes, key), root);
  return object;
}

// How many schemas one value's shape is read from at most ($ref chains, nested allOf/anyOf/oneOf): a bound, cycles included.
const MAX_SHAPES = 64;

/** `schema` with what it refers to (`$ref` within the same document) and its branches, each once; none without a schema. */
function schemasOf(schema: Schema | undefined, root: Schema | undefined): Schema[] {
  const found: Schema[] = [];
  const pending = schema === undefined ? [] : [schema];
  while (pending.length > 0 && found.length < MAX_SHAPES) {
    const next = pending.shift()!;
    if (found.includes(next)) continue;
    found.push(next);
    const target = typeof next.$ref === 'string' ? localTarget(next.$ref, root) : undefined;
    if (target !== undefined) pending.push(target);
    for (const branch of ['allOf', 'anyOf', 'oneOf'] as const) {
      const list = next[branch];
      if (Array.isArray(list)) for (const item of list) if (isSchema(item)) pending.push(item);
    }
  }
  return found;
}

/** What a `$ref` of the form `#` or `#/a/b` (a JSON pointer into the root schema) names, if a schema. */
function localTarget(ref: string, root: Schema | undefined): Schema | undefined {
  if (root === undefined || (ref !== '#' && !ref.startsWith('#/'))) return undefined;
  let node: unknown = root;
  for (const raw of ref === '#' ? [] : ref.slice(2).split('/')) {
    let part: string;
    try {
      part = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    } catch {
      return undefined;
    }
    if (!isSchema(node) || !Object.hasOwn(node, part)) return undefined;
    node = node[part];
  }
  return isSchema(node) ? node : undefined;
}

function declaresObject(schema: Schema): boolean {
  const type = schema.type;
  return type === 'object' || (Array.isArray(type) && type.includes('object') && !type.includes('array'));
}

/** The schema of `key`'s value: the first of the shapes that names it, else the first that gives additionalProperties a schema. */
function childSchema(shapes: Schema[], key: string): Schema | undefined {
  for (const shape of shapes) {
    const properties = shape.properties;
    if (isSchema(properties) && Object.hasOwn(properties, key) && isSchema(properties[key])) return properties[key];
  }
  return shapes.find((shape) => isSchema(shape.additionalProperties))?.additionalProperties as Schema | undefined;
}

function isSchema(value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A header's text: the first of several (node keeps a repeated Content-Type once anyway). */
function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
