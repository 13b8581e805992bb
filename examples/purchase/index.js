'use strict';
/**
 * Named functions, invoked the way the seed's Java (Funqy) functions are:
 *   POST /purchase with a JSON body, GET /purchase?customerId=1&productId=2,
 *   or a CloudEvent posted to / with ce-type "purchase".
 */

/** The seed's purchase example: `customerId` and `productId` integers in, an order out. */
function purchase(input, context) {
  context.log.info({ customerId: input.customerId, productId: input.productId }, 'purchase');
  return { orderId: `order-${input.customerId}-${input.productId}`, customerId: input.customerId, productId: input.productId, status: 'purchased' };
}
purchase.inputSchema = {
  type: 'object',
  properties: {
    customerId: { type: 'integer', minimum: 1 },
    productId: { type: 'integer', minimum: 1 },
  },
  required: ['customerId', 'productId'],
  additionalProperties: false,
};

/** String in, string out: POST "hello" answers "HELLO". */
function toUpperCase(input) {
  return typeof input === 'string' ? input.toUpperCase() : String(input ?? '').toUpperCase();
}

/** byte[] in, byte[] out: the bytes reversed. */
function reverseBytes(input) {
  return Buffer.from(input ?? Buffer.alloc(0)).reverse();
}

/** A family from the query string: nested objects, lists and lists of objects. */
function family(input) {
  return { dad: input.dad, pets: input.pets, kids: input.kids, addresses: input.addresses };
}
family.inputSchema = {
  type: 'object',
  properties: {
    dad: { type: 'object', properties: { first: { type: 'string' }, age: { type: 'integer' } } },
    pets: { type: 'array', items: { type: 'string' } },
    kids: { type: 'array', items: { type: 'object', properties: { first: { type: 'string' } } } },
    addresses: { type: 'object', additionalProperties: { type: 'object', properties: { city: { type: 'string' } } } },
  },
};

/**
 * CloudEvents only (the seed's CloudEvent<T>): receives the whole event and answers with one,
 * whose type signals the outcome. It answers ce-type "dev.example.purchase.audit".
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

/** Nothing back: 204. */
function forget() {
  return undefined;
}

module.exports = { functions: { purchase, toUpperCase, reverseBytes, family, audit, forget } };
