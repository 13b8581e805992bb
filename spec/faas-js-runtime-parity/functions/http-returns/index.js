'use strict';
// An HTTP function returning each kind of value faas-js-runtime documents, chosen by ?kind= (read
// as a query key on the context).
const { Readable } = require('node:stream');

const RETURNS = {
  string: () => 'hello',
  empty: () => '',
  object: () => ({ message: 'hello', n: 1 }),
  array: () => [1, 'two', { three: 3 }],
  structured: () => ({ statusCode: 201, headers: { 'X-Made': 'yes', 'content-type': 'text/html' }, body: '<b>hello</b>' }),
  'structured-string': () => ({ body: 'hello' }),
  'structured-object': () => ({ statusCode: 202, body: { accepted: true } }),
  'structured-object-as-text': () => ({ headers: { 'Content-Type': 'text/plain' }, body: { as: 'text' } }),
  'structured-buffer': () => ({ body: Buffer.from([0, 1, 2, 255]) }),
  'structured-number': () => ({ body: 42 }),
  'structured-true': () => ({ body: true }),
  'structured-null': () => ({ statusCode: 200, body: null }),
  'headers-only': () => ({ headers: { 'x-only': 'headers' } }),
  'status-only': () => ({ statusCode: 418, statusMessage: 'teapot' }),
  number: () => 42,
  zero: () => 0,
  true: () => true,
  false: () => false,
  undefined: () => undefined,
  null: () => null,
  buffer: () => Buffer.from('bytes \u00ff'),
  uint8array: () => new Uint8Array([1, 2, 3, 255]),
  stream: () => Readable.from(['str', 'eam']),
};

const handle = async (context) => {
  const make = Object.hasOwn(RETURNS, context.kind ?? '') ? RETURNS[context.kind] : undefined;
  return make === undefined ? { kinds: Object.keys(RETURNS) } : make();
};

module.exports = { handle };
