'use strict';
// The floor: a plain node:http server doing the same work as bench/function/index.js, by hand:
// it checks the content type before parsing, reads an event's required attributes (its `ce-*`
// headers, or the structured envelope's members) and answers an event with a fresh id and time.
const http = require('node:http');
const { randomUUID } = require('node:crypto');

let DOMParser;
let CloudEvent;
const json = (res, status, value, headers = {}) => {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
};
const refuse = (res, status, message) => json(res, status, { error: message });
const REQUIRED = ['id', 'source', 'type', 'specversion'];

/** The event a request carries: binary (its `ce-*` headers) or structured; undefined when an attribute is missing. */
function readEvent(req, text, type) {
  if (type.startsWith('application/cloudevents+json')) {
    const event = JSON.parse(text);
    return REQUIRED.every((name) => typeof event[name] === 'string') ? event : undefined;
  }
  const h = req.headers;
  if (!REQUIRED.every((name) => typeof h[`ce-${name}`] === 'string')) return undefined;
  return { id: h['ce-id'], source: h['ce-source'], type: h['ce-type'], specversion: h['ce-specversion'], data: JSON.parse(text) };
}

// An answered event's attributes as binary-mode headers.
const eventHeaders = (event) => ({
  'ce-id': event.id,
  'ce-source': event.source,
  'ce-type': event.type,
  'ce-specversion': event.specversion,
  'ce-time': event.time,
});

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    const q = req.url.indexOf('?');
    const path = q === -1 ? req.url : req.url.slice(0, q);
    const type = req.headers['content-type'] || '';
    switch (path) {
      case '/json':
        if (!type.startsWith('application/json')) return refuse(res, 415, 'expected JSON');
        return json(res, 200, { ok: true, customerId: JSON.parse(text).customerId });
      case '/text': {
        const body = `received ${text.length} characters`;
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
        return res.end(body);
      }
      case '/event': {
        if (type.startsWith('application/cloudevents-batch+json')) {
          // A batch: each event read as the function reads it; the function answers none of them.
          const events = JSON.parse(text);
          for (const event of events) {
            if (!REQUIRED.every((name) => typeof event[name] === 'string')) return refuse(res, 400, 'invalid event');
            void { ok: true, type: event.type, customerId: event.data.customerId };
          }
          res.writeHead(204);
          return res.end();
        }
        const event = readEvent(req, text, type);
        if (event === undefined) return refuse(res, 400, 'invalid event');
        return json(res, 200, { ok: true, type: event.type, customerId: event.data.customerId });
      }
      case '/event-reply': {
        const event = readEvent(req, text, type);
        if (event === undefined) return refuse(res, 400, 'invalid event');
        const reply = { id: randomUUID(), source: '/bench', type: 'dev.bench.reply', specversion: '1.0', time: new Date().toISOString() };
        return json(res, 200, { ok: true, customerId: event.data.customerId }, eventHeaders(reply));
      }
      case '/event-return': {
        // The function makes the answer with the SDK's constructor: so does this server.
        const event = readEvent(req, text, type);
        if (event === undefined) return refuse(res, 400, 'invalid event');
        CloudEvent ??= require('cloudevents').CloudEvent;
        const reply = new CloudEvent({ source: '/bench', type: 'dev.bench.reply', data: { ok: true, customerId: event.data.customerId } });
        return json(res, 200, reply.data, eventHeaders(reply));
      }
      case '/xml': {
        DOMParser ??= require('@xmldom/xmldom').DOMParser;
        const doc = new DOMParser().parseFromString(text, 'text/xml');
        return json(res, 200, { root: doc.documentElement.nodeName });
      }
      case '/query': {
        const query = Object.fromEntries(new URLSearchParams(req.url.slice(q + 1)));
        return json(res, 200, { name: query.name, page: query.page });
      }
      case '/health/readiness':
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
        return res.end('OK');
      default:
        res.writeHead(204);
        return res.end();
    }
  });
});
server.listen(Number(process.env.PORT || 8080), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
