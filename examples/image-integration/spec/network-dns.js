'use strict';
// A tiny DNS server on 127.0.0.1 (UDP, node:dgram) for the network specs: it answers A and AAAA
// questions from a table, answers NXDOMAIN for names not in it, and never answers names marked
// 'hang', nor the questions of a type marked so ({ A: [...], AAAA: 'hang' }: a server that drops
// AAAA questions, as some resolvers and firewalls do). Every question is recorded. Name resolution in the specs never leaves this machine.
const dgram = require('node:dgram');
const net = require('node:net');

const TYPES = { 1: 'A', 28: 'AAAA' };

function ipv6Bytes(address) {
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const words = (s) => (s ? s.split(':').map((w) => parseInt(w, 16)) : []);
  const left = words(head);
  const right = words(tail);
  const all = tail === undefined ? left : [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  all.forEach((w, i) => out.writeUInt16BE(w, i * 2));
  return out;
}

/** Reads the question's name and type; returns where the question ends. */
function question(msg) {
  const labels = [];
  let i = 12;
  while (msg[i] !== 0) {
    labels.push(msg.subarray(i + 1, i + 1 + msg[i]).toString('latin1'));
    i += msg[i] + 1;
  }
  const type = msg.readUInt16BE(i + 1);
  return { name: labels.join('.').toLowerCase(), type: TYPES[type] ?? String(type), end: i + 5 };
}

/**
 * `table`: { name: 'hang' | { A?: string[] | 'hang', AAAA?: string[] | 'hang' } }. Returns { port, server, queries, close }.
 */
async function startDns(table) {
  const queries = [];
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, rinfo) => {
    if (msg.length < 17) return;
    const q = question(msg);
    queries.push({ name: q.name, type: q.type });
    const entry = table[q.name];
    if (entry === 'hang' || (entry !== undefined && entry[q.type] === 'hang')) return;
    const records = entry === undefined ? [] : (entry[q.type] ?? []);
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0); // id
    header.writeUInt16BE(0x8180 | (entry === undefined ? 3 : 0), 2); // QR RD RA, NXDOMAIN when unknown
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(records.length, 6);
    const answers = records.map((address) => {
      const data = net.isIPv4(address) ? Buffer.from(address.split('.').map(Number)) : ipv6Bytes(address);
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      rr.writeUInt16BE(data.length === 4 ? 1 : 28, 2);
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(data.length, 10);
      return Buffer.concat([rr, data]);
    });
    socket.send(Buffer.concat([header, msg.subarray(12, q.end), ...answers]), rinfo.port, rinfo.address);
  });
  await new Promise((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const port = socket.address().port;
  return { port, server: `127.0.0.1:${port}`, queries, close: () => new Promise((resolve) => socket.close(resolve)) };
}

module.exports = { startDns };
