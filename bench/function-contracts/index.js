'use strict';
// The benchmark's function with an event contract declared and idempotency on (the memory store):
// the same handler as bench/function, measured against it on the unique-id CloudEvent workload.
const base = require('../function');

module.exports = {
  events: {
    types: {
      'dev.bench.order': {
        type: 'object',
        properties: { customerId: { type: 'integer' }, productId: { type: 'integer' }, quantity: { type: 'integer', minimum: 1 } },
        required: ['customerId'],
      },
    },
    idempotency: true,
  },
  handle: base.handle,
};
