'use strict';
// Raw TCP for the specs where HTTP clients cannot say what an attacker sends: malformed framing,
// pipelining, absolute-form targets, missing Host.
const net = require('node:net');

/**
 * Sends `data` (string or Buffer) to `port` and resolves with everything the server sent until it
 * closed the connection, or until `wait` ms passed (then `timedOut` is true).
 */
function exchange(port, data, { wait = 3000, writes = [] } = {}) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(data);
      for (const [delay, more] of writes) setTimeout(() => socket.writable && socket.write(more), delay);
    });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), timedOut: true });
    }, wait);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (err) => {
      if (err.code !== 'ECONNRESET') {
        clearTimeout(timer);
        reject(err);
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), timedOut: false });
    });
  });
}

/** The status lines of every response in `text`, in order. */
function statuses(text) {
  return [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
}

/** Splits the first response in `text` into status, headers (lowercased names) and body. */
function firstResponse(text) {
  const end = text.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    headers[name] = headers[name] === undefined ? line.slice(colon + 1).trim() : [].concat(headers[name], line.slice(colon + 1).trim());
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(end + 4) };
}

module.exports = { exchange, statuses, firstResponse };
