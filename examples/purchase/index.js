'use strict';
/**
 * Named functions, invoked the way the function contract's Java (Funqy) functions are:
 *   POST /purchase with a JSON body, GET /purchase?customerId=1&productId=2,
 *   or a CloudEvent posted to / with ce-type "purchase".
 *
 * Input is the client's, so each function bounds it: an `inputSchema` (checked before the
 * function runs, a 400 otherwise) gives every string a maxLength, every list a maxItems and
 * every number a range; bytes, which JSON Schema cannot describe, are checked by hand.
 */

const badRequest = (message) => Object.assign(new Error(message), { statusCode: 400 });

/** Ids are Java ints, as in the function contract's Purchase: 1 to 2^31 - 1. */
const ID = { type: 'integer', minimum: 1, maximum: 2147483647 };

/** The function contract's purchase example: `customerId` and `productId` integers in, an order out. */
function purchase(input, context) {
  context.log.info({ customerId: input.customerId, productId: input.productId }, 'purchase');
  return { orderId: `order-${input.customerId}-${input.productId}`, customerId: input.customerId, productId: input.productId, status: 'purchased' };
}
purchase.inputSchema = {
  type: 'object',
  properties: { customerId: ID, productId: ID },
  required: ['customerId', 'productId'],
  additionalProperties: false,
};

/** String in, string out: POST "hello" answers "HELLO". */
function toUpperCase(input) {
  return input.toUpperCase();
}
// A bounded JSON string, nothing else: the function can rely on input.toUpperCase existing.
toUpperCase.inputSchema = { type: 'string', maxLength: 10000 };

/** byte[] in, byte[] out: the bytes reversed. At most 64 KiB. */
function reverseBytes(input) {
  // Bytes arrive as a Buffer (application/octet-stream, or an event's data_base64); no body is
  // no bytes. Nothing else is bytes: Buffer.from({"length": 1e9}) would allocate a gigabyte.
  if (input === undefined) return Buffer.alloc(0);
  if (!Buffer.isBuffer(input)) throw badRequest('reverseBytes takes bytes: send them as application/octet-stream');
  if (input.length > 64 * 1024) throw badRequest('reverseBytes takes at most 65536 bytes');
  return Buffer.from(input).reverse();
}

/** A family from the query string: nested objects, lists and lists of objects. */
function family(input) {
  return { dad: input.dad, pets: input.pets, kids: input.kids, addresses: input.addresses };
}
const NAME = { type: 'string', maxLength: 100 };
const person = { type: 'object', properties: { first: NAME, age: { type: 'integer', minimum: 0, maximum: 150 } }, additionalProperties: false };
// Other top-level fields are ignored (family() reads only these four), so they are not checked:
// checking them would walk every key of the input, and a 1 MiB byte body has a million.
family.inputSchema = {
  type: 'object',
  properties: {
    dad: person,
    pets: { type: 'array', maxItems: 20, items: NAME },
    kids: { type: 'array', maxItems: 20, items: person },
    addresses: { type: 'object', maxProperties: 10, additionalProperties: { type: 'object', properties: { city: NAME }, additionalProperties: false } },
  },
};

/**
 * CloudEvents only (the function contract's CloudEvent<T>): receives the whole event and answers with one,
 * whose type signals the outcome. It answers ce-type "dev.example.purchase.audit".
 * No inputSchema: any data is audited (bad data is a "failed" audit, not a 400), and only
 * `data.customerId` is read, with a check that holds for any value.
 */
function audit(event, context) {
  const ok = Number.isInteger(event.data?.customerId);
  return context
    .cloudEventResponse({ audited: event.id, subject: event.subject ?? null })
    .type(ok ? 'dev.example.audit.passed' : 'dev.example.audit.failed')
    .source('/purchase/audit');
}
audit.cloudEvent = true;
audit.trigger = 'dev.example.purchase.audit';

/** Nothing back: 204. Its input is never read, so it needs no schema. */
function forget() {
  return undefined;
}

module.exports = { functions: { purchase, toUpperCase, reverseBytes, family, audit, forget } };
