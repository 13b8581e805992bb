// A JavaScript project's function and its tests (CommonJS, as node runs them): for HTTP, or for
// CloudEvents answered with an event of the function's name.
import { eventIntegrationTests, HTTP_INTEGRATION_TESTS } from './integration-tests';

/** The function and its unit and integration tests, by path. */
export function javascriptFiles(name: string, events: boolean): Record<string, string> {
  return {
    'index.js': events ? jsEventHandler(name) : JS_HTTP_HANDLER,
    'test/unit.js': events ? jsEventUnit(name) : JS_HTTP_UNIT,
    'test/integration.js': events ? jsEventIntegration(name) : JS_HTTP_INTEGRATION,
  };
}

const JS_HTTP_HANDLER = `'use strict';

/**
 * An HTTP function: funcrun calls it once per request.
 *
 * @param {import('funcrun').Context} context the request: method, path, query, headers, log
 * @param {unknown} body the request body, parsed by its content type (JSON gives an object)
 * @returns {object} sent as JSON
 */
function handle(context, body) {
  context.log.info(\`\${context.method} \${context.path}\`);
  if (context.method === 'GET') return { query: { ...context.query } };
  return { received: body ?? null };
}

module.exports = { handle };
`;

const JS_HTTP_UNIT = `'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { createContext } = require('funcrun/testing');
const { handle } = require('../index.js');

test('GET answers with the query', () => {
  const result = handle(createContext({ url: '/?name=tiger' }));
  assert.deepEqual(result, { query: { name: 'tiger' } });
});

test('POST answers with the body it received', () => {
  const body = { message: 'hello' };
  const result = handle(createContext({ method: 'POST', body }), body);
  assert.deepEqual(result, { received: body });
});
`;

const JS_HTTP_INTEGRATION = `'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { startFunction } = require('funcrun/testing');

const folder = path.join(__dirname, '..');
let running;
before(async () => {
  running = await startFunction(folder, { config: folder });
});
after(() => running.close());

${HTTP_INTEGRATION_TESTS}`;

function jsEventHandler(name: string): string {
  return `'use strict';

/**
 * A CloudEvent function: funcrun calls it once per event, with the event's data.
 *
 * @param {import('funcrun').Context} context \`context.cloudevent\` is the incoming event
 * @param {unknown} data the event's data, parsed by its content type
 */
function handle(context, data) {
  const event = context.cloudevent;
  if (!event) {
    throw Object.assign(new Error('expected a CloudEvent'), { statusCode: 400 });
  }
  context.log.info({ id: event.id, type: event.type }, 'event received');
  return context.cloudEventResponse({ received: data ?? null }).type('dev.example.${name}.response').source('/${name}').response();
}

module.exports = { handle };
`;
}

function jsEventUnit(name: string): string {
  return `'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { createContext, CloudEvent } = require('funcrun/testing');
const { handle } = require('../index.js');

test('an event is answered with an event carrying its data', () => {
  const event = new CloudEvent({ type: 'dev.example.${name}', source: '/test', data: { message: 'hello' } });
  const answer = handle(createContext({ method: 'POST', cloudevent: event }), event.data);
  assert.equal(answer.type, 'dev.example.${name}.response');
  assert.deepEqual(answer.data, { received: { message: 'hello' } });
});

test('a plain request is a 400', () => {
  assert.throws(() => handle(createContext({ method: 'POST' }), {}), (err) => err.statusCode === 400);
});
`;
}

function jsEventIntegration(name: string): string {
  return `'use strict';
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { startFunction } = require('funcrun/testing');

const folder = path.join(__dirname, '..');
let running;
before(async () => {
  running = await startFunction(folder, { config: folder });
});
after(() => running.close());

${eventIntegrationTests(name)}`;
}
