'use strict';
// The floor: a plain node:http server doing the same work as bench/function/index.js, by hand.
const http = require('node:http');
const { randomUUID } = require('node:crypto');

let DOMParser;
const json = (res, status, value, headers = {}) => {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
};

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    const q = req.url.indexOf('?');
    const path = q === -1 ? req.url : req.url.slice(0, q);
    switch (path) {
      case '/json':
        return json(res, 200, { ok: true, customerId: JSON.parse(text).customerId });
      case '/text': {
        const body = `received ${text.length} characters`;
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
        return res.end(body);
      }
      case '/event': {
        // Binary mode: the type from its header; structured: from the JSON envelope.
        const structured = (req.headers['content-type'] || '').startsWith('application/cloudevents+json');
        const event = structured ? JSON.parse(text) : { type: req.headers['ce-type'], data: JSON.parse(text) };
        return json(res, 200, { ok: true, type: event.type, customerId: event.data.customerId });
      }
      case '/event-reply': {
        const data = JSON.parse(text);
        return json(
          res,
          200,
          { ok: true, customerId: data.customerId },
          {
            'ce-id': randomUUID(),
            'ce-source': '/bench',
            'ce-type': 'dev.bench.reply',
            'ce-specversion': '1.0',
            'ce-time': new Date().toISOString(),
          },
        );
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
