'use strict';
// An async HTTP function that waits before answering with a structured response.
const { setTimeout: sleep } = require('node:timers/promises');

async function handle(context, body) {
  await sleep(5);
  return { statusCode: 201, headers: { 'x-async': 'yes' }, body: { echoed: body ?? null, method: context.method } };
}

module.exports = { handle };
