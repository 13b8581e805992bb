'use strict';
// A function written for faas-js-runtime, moved to funcrun by the documented one line of
// package.json, answers as it did: checked differentially against the real faas-js-runtime 4.0.1.
//
// Two projects hold the same functions (Knative's four Node.js templates, and the ones in
// spec/faas-js-runtime-parity/functions): one installs faas-js-runtime 4.0.1, the other is the
// same package.json with its faas-js-runtime line pointing at this checkout's `npm pack` tarball.
// Both are plain `npm install`s from the loopback registry (spec/registry.js, which serves the
// devDependency `faas-js-runtime-4` under its own name), the TypeScript templates are compiled
// with their own tsconfig against each project's copy, and each function is started as `npm
// start` starts it (`node_modules/.bin/faas-js-runtime <file>`), once per project. The same
// requests go to both; every answer is reduced to what a client sees (status, media type, whether
// it is a CloudEvent and its attributes, the data as JSON or bytes, CORS and the function's own
// headers), and every difference fails unless ACCEPTED below names it, with the reason.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const { isDeepStrictEqual } = require('node:util');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { freePort, waitUntilListening } = require('./helpers');
const { startRegistry } = require('./registry');

const ROOT = path.join(__dirname, '..');
const FUNCTIONS = path.join(__dirname, 'faas-js-runtime-parity', 'functions');
const TEMPLATES = path.join(__dirname, 'peers', 'knative-func-templates.tar.gz');
const TSC = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
const { version: VERSION } = require('../package.json');
const TARBALL = `funcrun-${VERSION}.tgz`;
const PEER = 'faas-js-runtime';
const SIDES = [PEER, 'funcrun'];

// ---------------------------------------------------------------------------------------------
// The differences the spec knows. Each entry names where it shows (`functions`, `requests`: lists,
// or '*' for all) and which aspects differ there (`differs`: aspect names, or 'answer' for a
// different answer altogether: the status differs, and with it whatever else). Every aspect that
// differs must be named by an entry whose aspects all differ there; any other difference fails,
// and so does an entry that shows nowhere (the lists stay the truth).
// ---------------------------------------------------------------------------------------------
const EVENT_REQUESTS = [
  'CloudEvent 1.0 binary, JSON data',
  'CloudEvent 0.3 binary, JSON data',
  'CloudEvent 1.0 structured, JSON data',
  'CloudEvent 0.3 structured, JSON data',
  'CloudEvent 1.0 structured, with a time',
  'CloudEvent 1.0 binary, text data',
  'CloudEvent 1.0 binary, image/png data',
  'CloudEvent 1.0 binary, XML data',
  'CloudEvent 1.0 binary, text/csv data',
  'CloudEvent 1.0 structured, XML data',
  'CloudEvent 1.0 structured, data_base64',
  'CloudEvent 1.0 binary, no data',
  'CloudEvent 1.0 binary, with a traceparent',
];
const EVENT_FUNCTIONS = ['template node/cloudevents', 'template typescript/cloudevents', 'event-attributes', 'event-response', 'esm'];
// The CloudEvent functions that read the event without checking there is one: a plain request without a body makes them throw.
const EVENT_READERS = ['event-attributes', 'event-response', 'event-data'];

// Accepted: following faas-js-runtime would leak internals, lose data, open a hole, or break a
// rule of funcrun's that docs/migrating.md states ("What compatibility does not follow").
const ACCEPTED = [
  {
    functions: '*',
    requests: ['CloudEvent structured, malformed JSON'],
    differs: 'answer',
    why: 'faas-js-runtime runs a structured event whose JSON is malformed as a plain request, its text the body; funcrun answers 400 saying where the JSON breaks: the sender meant an event, and run as text it would be lost',
  },
  {
    functions: '*',
    requests: ['CloudEvent with specversion 9.9'],
    differs: 'answer',
    why: "faas-js-runtime's SDK validates 1.0 events only, so an unknown specversion reaches the handler unchecked (any attribute of any shape); funcrun refuses it, 400 naming specversion: an event it cannot check would open a hole",
  },
  {
    functions: '*',
    requests: ['CloudEvent 1.0 binary without ce-source'],
    differs: 'answer',
    why: "a malformed event is the client's error: funcrun's 400 names the attribute; faas-js-runtime's 500 ('invalid payload' with its schema validator's details) reports the runtime as failed and shows its internals",
  },
  {
    functions: '*',
    requests: ['CloudEvent batch'],
    differs: 'answer',
    why: "faas-js-runtime fails on a batch with a 500 naming its internals ('request.fcontext.cloudevent.validate is not a function'); funcrun runs the handler once per event: 5xx bodies never leak internals",
  },
  {
    functions: '*',
    requests: ['POST JSON with a syntax error'],
    differs: ['body/message', 'body/position', 'body/line', 'body/column'],
    why: "the same 400 in fastify's shape; V8's message quotes the body back, funcrun's says where the error is and never echoes the body (docs/functions.md: request data)",
  },
  {
    functions: EVENT_READERS,
    requests: ['POST, no body', 'GET /', 'GET / with a query', 'GET / from another origin'],
    differs: ['body'],
    why: "the same 500 as text; faas-js-runtime's body is the thrown message (a TypeError's here), funcrun's is generic: 5xx bodies never leak internals",
  },
  {
    functions: ['http-errors'],
    requests: ['GET /?kind=plain', 'GET /?kind=statusCode', 'GET /?kind=string'],
    differs: ['body'],
    why: "the same 500 as text; faas-js-runtime's body is the thrown message ('connect ECONNREFUSED 10.0.3.7:5432'; nothing for a thrown string), funcrun's is generic: 5xx bodies never leak internals",
  },
  {
    functions: ['http-errors'],
    requests: ['GET /?kind=code-string'],
    differs: ['body', 'type'],
    why: "a non-numeric `code` ('ENOENT'): faas-js-runtime fails to send it as a status and fastify answers a JSON 500 carrying the error's message and code; funcrun's 500 is generic text: 5xx bodies never leak internals",
  },
  {
    functions: ['http-body'],
    requests: EVENT_REQUESTS,
    differs: ['body/received/time'],
    why: "the event's time as the function reads it: the SDK under faas-js-runtime makes one up (the arrival) for an event that has none and reformats one it has through a Date (losing precision below a millisecond); funcrun passes it as sent: made-up values are lost data",
  },
  {
    functions: ['http-async'],
    requests: EVENT_REQUESTS,
    differs: ['body/echoed/time'],
    why: 'the same: a made-up or reformatted event time under faas-js-runtime, the time as sent under funcrun',
  },
  {
    functions: ['http-body', 'esm'],
    requests: ['POST form with bracketed keys'],
    differs: ['body/received/a', 'body/received/a[b]'],
    why: "faas-js-runtime's qs nests `a[b]=1` into { a: { b: '1' } }; funcrun keeps flat keys: nesting as qs does comes with qs's silent losses (next entry)",
  },
  {
    functions: ['http-async'],
    requests: ['POST form with bracketed keys'],
    differs: ['body/echoed/a', 'body/echoed/a[b]'],
    why: 'the same: nested form keys under faas-js-runtime, flat ones under funcrun',
  },
  {
    functions: ['http-body', 'esm'],
    requests: ['POST form with a key named like a method'],
    differs: ['body/received/toString'],
    why: "faas-js-runtime's qs drops a form key named like a member of Object.prototype (`toString=1`), as it drops every parameter past the thousandth; funcrun keeps them: lost data",
  },
  {
    functions: ['template typescript/http', 'template typescript/cloudevents'],
    requests: ['POST form with a key named like a method'],
    differs: 'answer',
    why: "the same kept key: these templates log `body: ${body}`, and a form whose own `toString` is a string has no text: the function throws, a 500 with its error in the log, where faas-js-runtime's qs had dropped the key",
  },
  {
    functions: ['http-async'],
    requests: ['POST form with a key named like a method'],
    differs: ['body/echoed/toString'],
    why: 'the same: the key dropped under faas-js-runtime, kept under funcrun',
  },
  {
    functions: EVENT_FUNCTIONS,
    requests: ['CloudEvent 1.0 binary, with a traceparent'],
    differs: ['ce:traceparent'],
    why: 'the answering event carries the trace its request came in (the distributed tracing extension, docs/logging.md: trace context); faas-js-runtime drops it, and the trace ends at the function: lost data',
  },
  {
    functions: ['esm'],
    requests: ['CloudEvent 1.0 structured, data_base64'],
    differs: ['body', 'ce:type'],
    why: "`data_base64` as the handler gets it: faas-js-runtime's SDK (cloudevents 8) widens each byte into a Uint32Array, whose buffer holds four bytes for each one sent; funcrun gives a Uint8Array of the same values (the same JSON, the same `Buffer.from(data)`), not a corrupted buffer: lost data. This function tells them apart (`instanceof Uint8Array`)",
  },
  {
    functions: ['http-returns'],
    requests: ['GET /?kind=stream'],
    differs: ['body'],
    why: 'a returned stream: faas-js-runtime (fastify) answers 200 with an empty body, the stream unread; funcrun sends what it streams: lost data',
  },
  {
    functions: ['event-response'],
    requests: ['CloudEvent 1.0 binary, the chain returned without response()'],
    differs: ['event', 'ce:id', 'ce:source', 'ce:type', 'ce:specversion', 'ce:time', 'ce:datacontenttype', 'body/replyTo', 'body/echoed'],
    why: 'a cloudEventResponse() chain returned without response(): faas-js-runtime sends it as JSON, `{}` (its fields are private), losing the event; funcrun sends the event it describes (docs/cloudevents.md: answering with an event)',
  },
];

// ---------------------------------------------------------------------------------------------
// The requests. Each goes to every function; some functions have a few more of their own.
// ---------------------------------------------------------------------------------------------
const CE = { 'ce-id': 'parity-1', 'ce-source': '/parity/client', 'ce-type': 'parity.request', 'ce-myext': 'ext-value' };
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe, 0x80]);
const structured = (specversion, members) =>
  JSON.stringify({ specversion, id: 'parity-2', source: '/parity/client', type: 'parity.request', myext: 'ext-value', ...members });

const REQUESTS = {
  'CloudEvent 1.0 binary, JSON data': {
    method: 'POST',
    headers: { ...CE, 'ce-specversion': '1.0', 'ce-subject': 'orders', 'content-type': 'application/json' },
    body: '{"message":"hello"}',
  },
  'CloudEvent 0.3 binary, JSON data': {
    method: 'POST',
    headers: { ...CE, 'ce-specversion': '0.3', 'content-type': 'application/json' },
    body: '{"message":"hello"}',
  },
  'CloudEvent 1.0 structured, JSON data': {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: structured('1.0', { datacontenttype: 'application/json', data: { message: 'hello' } }),
  },
  'CloudEvent 1.0 structured, with a time': {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: structured('1.0', { time: '2024-05-06T07:08:09Z', subject: 'orders', datacontenttype: 'application/json', data: { message: 'hello' } }),
  },
  'CloudEvent 0.3 structured, JSON data': {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: structured('0.3', { datacontenttype: 'application/json', data: { message: 'hello' } }),
  },
  'CloudEvent 1.0 binary, text data': {
    method: 'POST',
    headers: { ...CE, 'ce-type': 'parity.text', 'ce-specversion': '1.0', 'content-type': 'text/plain' },
    body: 'hello text',
  },
  'CloudEvent 1.0 binary, image/png data': { method: 'POST', headers: { ...CE, 'ce-specversion': '1.0', 'content-type': 'image/png' }, body: PNG },
  'CloudEvent 1.0 binary, XML data': {
    method: 'POST',
    headers: { ...CE, 'ce-specversion': '1.0', 'content-type': 'application/xml' },
    body: '<order id="7"/>',
  },
  'CloudEvent 1.0 binary, text/csv data': { method: 'POST', headers: { ...CE, 'ce-specversion': '1.0', 'content-type': 'text/csv' }, body: 'id,qty\n7,2\n' },
  'CloudEvent 1.0 structured, XML data': {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: structured('1.0', { datacontenttype: 'application/xml', data: '<order id="7"/>' }),
  },
  'CloudEvent 1.0 structured, data_base64': {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: structured('1.0', { datacontenttype: 'image/png', data_base64: PNG.toString('base64') }),
  },
  'CloudEvent 1.0 binary, no data': { method: 'POST', headers: { ...CE, 'ce-type': 'parity.nothing', 'ce-specversion': '1.0' } },
  // As a Knative broker delivers events: with the trace they travel in.
  'CloudEvent 1.0 binary, with a traceparent': {
    method: 'POST',
    headers: { ...CE, 'ce-specversion': '1.0', 'content-type': 'application/json', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    body: '{"message":"hello"}',
  },
  'CloudEvent 1.0 binary without ce-source': {
    method: 'POST',
    headers: { 'ce-id': 'parity-3', 'ce-type': 'parity.request', 'ce-specversion': '1.0', 'content-type': 'application/json' },
    body: '{"message":"hello"}',
  },
  'CloudEvent batch': {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents-batch+json' },
    body: `[${structured('1.0', { datacontenttype: 'application/json', data: { message: 'hello' } })}]`,
  },
  'CloudEvent without ce-id': {
    method: 'POST',
    headers: { 'ce-source': '/parity/client', 'ce-type': 'parity.request', 'ce-specversion': '1.0', 'content-type': 'application/json' },
    body: '{"message":"hello"}',
  },
  'CloudEvent with specversion 9.9': {
    method: 'POST',
    headers: { ...CE, 'ce-specversion': '9.9', 'content-type': 'application/json' },
    body: '{"message":"hello"}',
  },
  'POST JSON': { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"tiger","list":[1,2]}' },
  'POST JSON; charset=utf-8': { method: 'POST', headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"name":"tiger"}' },
  'POST JSON with a syntax error': { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name": tiger}' },
  'CloudEvent structured, malformed JSON': {
    method: 'POST',
    headers: { 'content-type': 'application/cloudevents+json' },
    body: '{"specversion": "1.0", "id": ',
  },
  'POST JSON, empty body': { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' },
  'POST JSON as application/merge-patch+json': { method: 'POST', headers: { 'content-type': 'application/merge-patch+json' }, body: '{"name":"tiger"}' },
  'POST text': { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello world' },
  'POST text/csv': { method: 'POST', headers: { 'content-type': 'text/csv' }, body: 'a,b\n1,2\n' },
  'POST XML': { method: 'POST', headers: { 'content-type': 'application/xml' }, body: '<order id="1"/>' },
  'POST form': { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'name=tiger&n=1&n=2' },
  'POST form with bracketed keys': { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a[b]=1' },
  'POST form with a key named like a method': {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'toString=1&name=tiger',
  },
  'POST binary': { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: PNG },
  'POST, no body': { method: 'POST', headers: {} },
  'GET / with a query': { method: 'GET', path: '/?name=Ann&multi=1&multi=2', headers: { 'x-parity': 'yes' } },
  'GET /': { method: 'GET' },
  'HEAD /': { method: 'HEAD' },
  'PUT / JSON': { method: 'PUT', headers: { 'content-type': 'application/json' }, body: '{"name":"tiger"}' },
  'DELETE /': { method: 'DELETE' },
  'PATCH / JSON': { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"name":"tiger"}' },
  'GET /other': { method: 'GET', path: '/other' },
  'POST /other JSON': { method: 'POST', path: '/other', headers: { 'content-type': 'application/json' }, body: '{"name":"tiger"}' },
  'OPTIONS / preflight': { method: 'OPTIONS', headers: { origin: 'https://example.com', 'access-control-request-method': 'POST' } },
  'OPTIONS /other preflight': { method: 'OPTIONS', path: '/other', headers: { origin: 'https://example.com', 'access-control-request-method': 'POST' } },
  'GET / from another origin': { method: 'GET', headers: { origin: 'https://example.com' } },
  'GET /health/readiness': { method: 'GET', path: '/health/readiness' },
  'GET /health/liveness': { method: 'GET', path: '/health/liveness' },
};

const RETURN_KINDS = [
  'string',
  'empty',
  'object',
  'array',
  'structured',
  'structured-string',
  'structured-object',
  'structured-object-as-text',
  'structured-buffer',
  'structured-number',
  'structured-true',
  'structured-null',
  'headers-only',
  'status-only',
  'number',
  'zero',
  'true',
  'false',
  'undefined',
  'null',
  'buffer',
  'uint8array',
  'stream',
];
const ERROR_KINDS = ['code', 'code-headers', 'code-404', 'statusCode', 'code-string', 'plain', 'string'];

/**
 * The functions: `file` is what `npm start` names, `invents` the attributes of an answering event
 * that the runtime or the SDK makes up (compared for presence only), `requests` its own extra ones.
 */
const CASES = {
  'template node/http': { file: 'templates/node-http/index.js' },
  'template node/cloudevents': { file: 'templates/node-cloudevents/index.js', invents: ['id', 'time'] },
  'template typescript/http': { file: 'templates/typescript-http/build/index.js' },
  'template typescript/cloudevents': { file: 'templates/typescript-cloudevents/build/index.js', invents: ['id', 'time'] },
  'event-attributes': { file: 'functions/event-attributes/index.js', invents: ['id', 'time'] },
  'event-response': {
    file: 'functions/event-response/index.js',
    invents: ['time'],
    requests: {
      'CloudEvent 1.0 binary, the chain returned without response()': { ...REQUESTS['CloudEvent 1.0 binary, JSON data'], path: '/?unfinished' },
    },
  },
  'event-data': { file: 'functions/event-data/index.js' },
  'http-body': { file: 'functions/http-body/index.js' },
  'http-request': { file: 'functions/http-request/index.js' },
  'http-returns': {
    file: 'functions/http-returns/index.js',
    requests: Object.fromEntries(RETURN_KINDS.map((kind) => [`GET /?kind=${kind}`, { method: 'GET', path: `/?kind=${kind}` }])),
  },
  'http-errors': {
    file: 'functions/http-errors/index.js',
    requests: Object.fromEntries(ERROR_KINDS.map((kind) => [`GET /?kind=${kind}`, { method: 'GET', path: `/?kind=${kind}` }])),
  },
  'http-async': { file: 'functions/http-async/index.js' },
  lifecycle: { file: 'functions/lifecycle/index.js' },
  esm: { file: 'functions/esm/index.js', invents: ['id', 'time'] },
};

// ---------------------------------------------------------------------------------------------
// What a client sees of an answer.
// ---------------------------------------------------------------------------------------------
// Headers compared besides the content type: CORS, Allow, and the functions' own (x-*).
const COMPARED_HEADER = /^(access-control-|allow$|x-)/;

const mediaTypeOf = (value) => (value === undefined ? undefined : value.split(';')[0].trim().toLowerCase());
const isJsonType = (media) => media !== undefined && (media === 'application/json' || media.endsWith('+json'));

/** Bytes as text when they are UTF-8 (readable in a report), else as base64: equal exactly when the bytes are. */
function bytesOf(buffer) {
  const text = buffer.toString('utf8');
  return Buffer.from(text, 'utf8').equals(buffer) ? `text:${text}` : `base64:${buffer.toString('base64')}`;
}

/** JSON where the media type says JSON and it parses, else bytes. */
function contentOf(media, buffer) {
  if (buffer.length === 0) return 'empty';
  if (isJsonType(media)) {
    try {
      return { json: JSON.parse(buffer.toString('utf8')) };
    } catch {
      // Not JSON after all: compared as bytes.
    }
  }
  return bytesOf(buffer);
}

/**
 * The answer as a flat record of aspects: `status`, `type` (the media type), `event` (whether the
 * answer is a CloudEvent), `ce:<attribute>` for each attribute, `body` (an event's data, or the
 * body), `header:<name>`.
 */
function aspectsOf({ status, headers, body }, invents) {
  const aspects = { status };
  const media = mediaTypeOf(headers['content-type']);
  aspects.type = media;
  const attributes = {};
  if (headers['ce-specversion'] !== undefined || headers['ce-id'] !== undefined) {
    // Binary: the attributes are the ce- headers, datacontenttype the Content-Type.
    for (const [name, value] of Object.entries(headers)) if (name.startsWith('ce-')) attributes[name.slice(3)] = value;
    if (headers['content-type'] !== undefined) attributes.datacontenttype = headers['content-type'];
    aspects.event = 'binary';
    aspects.body = contentOf(media, body);
  } else if (media === 'application/cloudevents+json') {
    aspects.event = 'structured';
    let members;
    try {
      members = JSON.parse(body.toString('utf8'));
    } catch {
      members = undefined;
    }
    if (members === null || typeof members !== 'object') aspects.body = bytesOf(body);
    else {
      const { data, data_base64: base64, ...rest } = members;
      Object.assign(attributes, rest);
      if (base64 !== undefined) aspects.body = bytesOf(Buffer.from(base64, 'base64'));
      else if (typeof data === 'string' && rest.datacontenttype !== undefined && !isJsonType(mediaTypeOf(rest.datacontenttype)))
        aspects.body = bytesOf(Buffer.from(data));
      else aspects.body = data === undefined ? 'empty' : { json: data };
    }
  } else {
    aspects.event = false;
    aspects.body = contentOf(media, body);
    // An event sent as JSON data (faas-js-runtime's answer to a plain request): its made-up attributes too.
    const json = aspects.body.json;
    if (isContainer(json) && typeof json.specversion === 'string') {
      for (const name of invents) if (name in json) json[name] = '(made up)';
    }
  }
  for (const [name, value] of Object.entries(attributes)) aspects[`ce:${name}`] = invents.includes(name) ? '(made up)' : value;
  for (const [name, value] of Object.entries(headers)) if (COMPARED_HEADER.test(name)) aspects[`header:${name}`] = value;
  return aspects;
}

/**
 * The aspects in which funcrun's answer differs from faas-js-runtime's. Two JSON bodies of answers
 * with the same status differ by path (`body/received/time`), so that an accepted difference in one
 * member cannot hide one in another.
 */
function differences(peer, ours) {
  const names = new Set([...Object.keys(peer), ...Object.keys(ours)]);
  // The media type is compared where faas-js-runtime sets one.
  if (peer.type === undefined) names.delete('type');
  const differ = [];
  for (const name of names) {
    if (isDeepStrictEqual(peer[name], ours[name])) continue;
    const a = peer[name]?.json;
    const b = ours[name]?.json;
    if (name === 'body' && peer.status === ours.status && isContainer(a) && isContainer(b)) differ.push(...jsonPaths(a, b, 'body'));
    else differ.push(name);
  }
  return differ.sort();
}

const isContainer = (value) => value !== null && typeof value === 'object';

/** The paths at which two JSON values differ: members of objects, items of arrays of one length. */
function jsonPaths(a, b, at) {
  if (isDeepStrictEqual(a, b)) return [];
  if (!isContainer(a) || !isContainer(b) || Array.isArray(a) !== Array.isArray(b) || (Array.isArray(a) && a.length !== b.length)) return [at];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].flatMap((key) => jsonPaths(a[key], b[key], `${at}/${key}`));
}

/** The value of an aspect, for a report: a body path is looked up in the JSON body. */
function valueAt(aspects, aspect) {
  if (!aspect.startsWith('body/')) return aspects[aspect];
  let value = aspects.body?.json;
  for (const key of aspect.split('/').slice(1)) value = isContainer(value) ? value[key] : undefined;
  return value;
}

const show = (value) => (value === undefined ? '(none)' : typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value)));

// ---------------------------------------------------------------------------------------------
// Processes and HTTP.
// ---------------------------------------------------------------------------------------------
/** Runs a command to completion: { code, output }. */
function exec(command, args, { cwd, env }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    child.on('close', (code) => resolve({ code, output }));
  });
}

// The environment a function runs in: the spec runner's own, without the variables either runtime
// reads, and with this node first on PATH (the binaries are `#!/usr/bin/env node` scripts).
const BASE_ENV = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !/^(FUNC_|PORT$|LIVENESS_URL$|READINESS_URL$|METRICS_URL$|NODE_OPTIONS$|NODE_TEST_CONTEXT$|K_|POD_NAME$|FAAS_)/.test(k),
  ),
);
BASE_ENV.PATH = `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH}`;

/** `node_modules/.bin/faas-js-runtime <file>` in `project`, as `npm start` runs it, on a free port. */
async function startFunction(project, file, env) {
  const port = await freePort();
  // FUNC_LOG_LEVEL=info, as Knative's templates start; FUNC_HOST keeps funcrun on loopback
  // (faas-js-runtime has no such setting and listens on every address).
  const child = spawn(path.join(project, 'node_modules', '.bin', 'faas-js-runtime'), [file], {
    cwd: project,
    env: { ...BASE_ENV, ...env, FUNC_PORT: String(port), FUNC_LOG_LEVEL: 'info', FUNC_HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (c) => (out.stdout += c));
  child.stderr.on('data', (c) => (out.stderr += c));
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  await waitUntilListening(port, { child, out });
  return { port, out, child, exited };
}

/** One request on its own connection: { status, headers, body }. */
function call(port, { method, path: target = '/', headers = {}, body }) {
  return new Promise((resolve, reject) => {
    const bytes = body === undefined ? undefined : Buffer.from(body);
    const sent = bytes === undefined ? headers : { ...headers, 'content-length': String(bytes.length) };
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers: sent, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    // A hang is a failure, not a wait for the test runner's own timeout.
    req.setTimeout(10_000, () => req.destroy(new Error(`${method} ${target}: no answer within 10s`)));
    req.on('error', reject);
    req.end(bytes);
  });
}

const PROBES = new Set(['/health/readiness', '/health/liveness']);

/**
 * The same request to both. faas-js-runtime's probes answer 503 while its event loop lags more
 * than 42 ms (overload-protection's default), as a busy machine makes it now and then: such a
 * probe is asked again (a few times), not compared.
 */
async function askBoth(running, request) {
  for (let attempt = 1; ; attempt++) {
    const answers = await Promise.all(SIDES.map((side) => call(running[side].port, request)));
    if (!PROBES.has(request.path) || answers[0].status !== 503 || attempt === 5) return answers;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

// ---------------------------------------------------------------------------------------------
// The two projects.
// ---------------------------------------------------------------------------------------------
let scratch;
let registry;
const projects = {};
// Every difference found, accepted or not, by function: [{ request, aspect, peer, ours }].
const found = new Map();

before(async () => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'funcrun-parity-'));
  registry = await startRegistry();
  const env = registry.env;

  // The function's package.json under faas-js-runtime, and the same with the one line moved.
  const manifest = {
    name: 'parity-functions',
    version: '1.0.0',
    private: true,
    scripts: { start: 'FUNC_LOG_LEVEL=info faas-js-runtime ./index.js' },
    dependencies: { '@types/node': '^22.0.0', cloudevents: '^10.0.0', 'faas-js-runtime': '4.0.1' },
    // faas-js-runtime 4.0.1 asks for cloudevents ^8, whose 8.0.3 ships the very code of 10.0.0
    // (only its engines differ: Node 22 at most). The checkout installs 10.0.0 in its place, as its
    // package.json's overrides say (no engine warning on Node 24), so the loopback registry holds
    // only that version: the project says the same.
    overrides: { cloudevents: '$cloudevents' },
  };
  const moved = { ...manifest, dependencies: { ...manifest.dependencies, 'faas-js-runtime': `file:${TARBALL}` } };
  const lines = (m) => JSON.stringify(m, null, 2).split('\n');
  assert.equal(lines(manifest).filter((line, i) => line !== lines(moved)[i]).length, 1, 'the move is one line of package.json');

  for (const [side, pkg] of [
    [PEER, manifest],
    ['funcrun', moved],
  ]) {
    const project = (projects[side] = path.join(scratch, side));
    fs.mkdirSync(path.join(project, 'templates'), { recursive: true });
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify(pkg, null, 2) + '\n');
    fs.cpSync(FUNCTIONS, path.join(project, 'functions'), { recursive: true });
    for (const template of ['node/http', 'node/cloudevents', 'typescript/http', 'typescript/cloudevents']) {
      const folder = path.join(project, 'templates', template.replace('/', '-'));
      fs.mkdirSync(folder);
      const untar = await exec('tar', ['-xzf', TEMPLATES, '-C', folder, '--strip-components=3', `templates/${template}`], { cwd: project, env });
      assert.equal(untar.code, 0, untar.output);
    }
  }
  // funcrun as a user packs it: the checkout's npm pack (built already: npm test builds first).
  const pack = await exec('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', projects.funcrun, ROOT], { cwd: ROOT, env });
  assert.equal(pack.code, 0, pack.output);

  // The two installs, plain npm install, at once.
  const installs = await Promise.all(SIDES.map((side) => exec('npm', ['install'], { cwd: projects[side], env })));
  for (const [i, install] of installs.entries()) assert.equal(install.code, 0, `${SIDES[i]}: ${install.output}`);
  const installed = (side) => JSON.parse(fs.readFileSync(path.join(projects[side], 'node_modules', 'faas-js-runtime', 'package.json'), 'utf8'));
  assert.deepEqual([installed(PEER).name, installed(PEER).version], ['faas-js-runtime', '4.0.1']);
  assert.deepEqual([installed('funcrun').name, installed('funcrun').version], ['funcrun', VERSION]);

  // The TypeScript templates, built by their own tsconfig against each project's faas-js-runtime.
  const builds = SIDES.flatMap((side) =>
    ['typescript-http', 'typescript-cloudevents'].map(async (template) => {
      const built = await exec(process.execPath, [TSC, '-p', path.join(projects[side], 'templates', template)], { cwd: projects[side], env });
      assert.equal(built.code, 0, `${side} ${template}: ${built.output}`);
    }),
  );
  await Promise.all(builds);
});

after(async () => {
  await registry?.close();
  if (scratch !== undefined) fs.rmSync(scratch, { recursive: true, force: true });
  if (process.env.FUNCRUN_PARITY_TABLE) fs.writeFileSync(process.env.FUNCRUN_PARITY_TABLE, table());
});

/** Every difference found, accepted or not, as a markdown table (written to the file FUNCRUN_PARITY_TABLE names). */
function table() {
  const rows = ['| function | request | aspect | faas-js-runtime 4.0.1 | funcrun | known as |', '|---|---|---|---|---|---|'];
  const cell = (value) => show(value).replace(/\|/g, '\\|').replace(/\n/g, '\\n').slice(0, 160);
  for (const [fn, list] of found) {
    for (const d of list) rows.push(`| ${fn} | ${d.request} | ${d.aspect} | ${cell(d.peer)} | ${cell(d.ours)} | ${d.known ?? '**unknown**'} |`);
  }
  return rows.join('\n') + '\n';
}

const KNOWN = ACCEPTED.map((entry) => ({ ...entry, kind: 'accepted' }));
const shown = new Set();

/**
 * Which differing aspects the known differences name here: those of each entry for this function
 * and request whose aspects all differ (an 'answer' entry: when the status does). Returns the kind
 * of the entry naming each aspect.
 */
function known(fn, request, differ) {
  const names = (list, name) => list === '*' || list.includes(name);
  const named = new Map();
  for (const entry of KNOWN) {
    if (!names(entry.functions, fn) || !names(entry.requests, request)) continue;
    const aspects =
      entry.differs === 'answer' ? (differ.includes('status') ? differ : []) : entry.differs.every((a) => differ.includes(a)) ? entry.differs : [];
    if (aspects.length === 0) continue;
    shown.add(entry);
    for (const aspect of aspects) if (!named.has(aspect)) named.set(aspect, entry.kind);
  }
  return named;
}

describe('a faas-js-runtime function moved to funcrun by one line of package.json answers as it did under faas-js-runtime 4.0.1', () => {
  for (const [fn, spec] of Object.entries(CASES)) {
    it(`${fn}: every answer is faas-js-runtime's, or an accepted difference`, async (t) => {
      const invents = spec.invents ?? [];
      const requests = { ...REQUESTS, ...spec.requests };
      const shutdownFiles = Object.fromEntries(SIDES.map((side) => [side, path.join(scratch, `${side}-${fn.replace(/\W/g, '-')}.shutdown`)]));
      const running = {};
      t.after(() => {
        for (const side of SIDES) if (running[side]?.child.exitCode === null) running[side].child.kill('SIGKILL');
      });
      await Promise.all(
        SIDES.map(async (side) => (running[side] = await startFunction(projects[side], spec.file, { PARITY_SHUTDOWN_FILE: shutdownFiles[side] }))),
      );
      const unexpected = [];
      const list = [];
      found.set(fn, list);
      for (const [name, request] of Object.entries(requests)) {
        const [peer, ours] = await askBoth(running, request);
        const a = aspectsOf(peer, invents);
        const b = aspectsOf(ours, invents);
        const differ = differences(a, b);
        const named = known(fn, name, differ);
        for (const aspect of differ) list.push({ request: name, aspect, peer: valueAt(a, aspect), ours: valueAt(b, aspect), known: named.get(aspect) });
        const unnamed = differ.filter((aspect) => !named.has(aspect));
        if (unnamed.length > 0)
          unexpected.push(`${name}: ${unnamed.map((aspect) => `${aspect} ${show(valueAt(a, aspect))} -> ${show(valueAt(b, aspect))}`).join('; ')}`);
      }
      // SIGTERM: both stop with 0, having run shutdown() where the function has one.
      const stopped = await Promise.all(
        SIDES.map((side) => {
          running[side].child.kill('SIGTERM');
          return running[side].exited;
        }),
      );
      const shutdown = SIDES.map((side) => (fs.existsSync(shutdownFiles[side]) ? fs.readFileSync(shutdownFiles[side], 'utf8') : '(not run)'));
      for (const [aspect, peer, ours] of [
        ['exit on SIGTERM', JSON.stringify(stopped[0]), JSON.stringify(stopped[1])],
        ['shutdown()', shutdown[0], shutdown[1]],
      ]) {
        if (peer === ours) continue;
        list.push({ request: 'SIGTERM', aspect, peer, ours });
        unexpected.push(`SIGTERM: ${aspect} ${peer} -> ${ours}`);
      }
      // funcrun's error lines, to tell why it answered as it did.
      const failures = running.funcrun.out.stdout.split('\n').filter((line) => /"level":(50|60)/.test(line));
      assert.deepEqual(
        unexpected,
        [],
        `funcrun answered otherwise than faas-js-runtime:\n  ${unexpected.join('\n  ')}\nfuncrun's errors:\n  ${failures.join('\n  ')}`,
      );
    });
  }

  it('every accepted difference still shows', () => {
    const stale = KNOWN.filter((entry) => !shown.has(entry)).map((entry) => `${entry.kind}: ${entry.why}`);
    assert.deepEqual(stale, [], 'accepted differences that no longer show: remove them from ACCEPTED');
  });
});
