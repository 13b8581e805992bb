'use strict';
// Shared by the specs: a real server on 127.0.0.1, port 0, per case, and a sink for log lines.
const { start, stop } = require('../lib/index.js');

/** Collects log lines; `entries()` parses each as JSON, so a line that is not JSON fails the test. */
function sink() {
  const lines = [];
  return {
    write(line) {
      lines.push(line);
    },
    lines,
    text: () => lines.join(''),
    entries: () => lines.map((line) => JSON.parse(line)),
  };
}

/**
 * Starts `func` and returns `{ url, server, log, close }`. `close()` stops it (running shutdown()).
 */
async function serve(func, options = {}) {
  const log = sink();
  const server = await start(func, { port: 0, host: '127.0.0.1', logDestination: log, ...options });
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, server, log, close: () => stop(server, 1000) };
}

/** fetch, returning status, headers and the body as text (and JSON when it parses). */
async function request(url, init) {
  const res = await fetch(url, init);
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

module.exports = { serve, sink, request };
