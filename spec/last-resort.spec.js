'use strict';
// The last-resort answer (errors.ts lastResort: answering a request failed, even sendError's own
// answer) closes its connection as its last answer (connections.ts lastAnswer): a request
// pipelined behind it is not run, as behind any answer that closes its connection. No request
// from outside reaches it (sendError does not throw on any input): it is driven here on a node
// server with funcrun's own connection bookkeeping, the functions the runtime uses.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { lastResort } = require('../lib/errors.js');
const { manageConnections, requestAnswered, requestArrived } = require('../lib/http/connections.js');
const { firstResponse, statuses } = require('./raw');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A node server that runs requests as funcrun's onRequest does: counted on their connection, not run behind a last answer. */
async function serverFor(t, routes) {
  const ran = [];
  const logged = [];
  const log = { error: (fields, msg) => logged.push({ fields, msg }) };
  const server = http.createServer((req, res) => {
    if (!requestArrived(req)) return;
    ran.push(req.url);
    routes[req.url](req, res, log);
  });
  manageConnections(server);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return { port: server.address().port, ran, logged };
}

/** A raw connection: what it has received so far, and when it closed. */
function connect(port) {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  socket.setEncoding('latin1');
  socket.on('data', (chunk) => (text += chunk));
  socket.on('error', () => {});
  const closed = new Promise((resolve) => socket.once('close', resolve));
  return { socket, closed, received: () => text };
}

function answered(req, res, body) {
  res.end(body);
  requestAnswered(req, res);
}

describe('the last-resort answer', () => {
  it('a bare JSON 500 that closes the connection: a request pipelined behind it once it was decided is not run', async (t) => {
    let slowDone;
    const slowGate = new Promise((resolve) => (slowDone = resolve));
    let brokeNow;
    const broke = new Promise((resolve) => (brokeNow = resolve));
    const server = await serverFor(t, {
      // An answer still being written, so that the ones pipelined behind it wait.
      '/slow': (req, res) => {
        res.writeHead(200, { 'content-length': 4 });
        slowGate.then(() => answered(req, res, 'slow'));
      },
      '/broken': (req, res, log) => {
        lastResort(res, log, new Error('answering failed'));
        requestAnswered(req, res);
        brokeNow();
      },
      '/after': (req, res) => answered(req, res, 'after'),
    });
    const client = connect(server.port);
    client.socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /broken HTTP/1.1\r\nHost: x\r\n\r\n');
    await broke;
    // Pipelined behind the last-resort answer, which waits behind /slow's: dispatched by node, never run.
    client.socket.write('POST /after HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi');
    await sleep(100);
    slowDone();
    await Promise.race([client.closed, sleep(3000)]);
    assert.equal(client.socket.destroyed, true, 'the connection closed');
    assert.deepEqual(server.ran, ['/slow', '/broken'], 'the request behind the last answer did not run');
    const text = client.received();
    assert.deepEqual(statuses(text), [200, 500]);
    const last = firstResponse(text.slice(text.indexOf('HTTP/1.1 500')));
    assert.equal(last.headers.connection, 'close');
    assert.equal(last.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(JSON.parse(last.body), { statusCode: 500, error: 'Internal Server Error', message: 'Internal Server Error' });
    assert.equal(server.logged[0].msg, 'answering the request failed');
  });

  it('after part of an answer was written: what was written reaches the client, then the connection ends without the last chunk', async (t) => {
    const server = await serverFor(t, {
      '/partial': (req, res, log) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('part one;');
        lastResort(res, log, new Error('answering failed'));
        requestAnswered(req, res);
      },
      '/after': (req, res) => answered(req, res, 'after'),
    });
    const client = connect(server.port);
    client.socket.write('GET /partial HTTP/1.1\r\nHost: x\r\n\r\n');
    await Promise.race([client.closed, sleep(3000)]);
    assert.equal(client.socket.destroyed, true, 'the connection closed');
    const answer = firstResponse(client.received());
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['transfer-encoding'], 'chunked');
    assert.equal(answer.body, '9\r\npart one;\r\n', 'the chunk written, and no terminating chunk');
    assert.deepEqual(server.ran, ['/partial']);
  });
});
