// A JavaScript project's function and its tests (CommonJS, as node runs them): for HTTP, for
// CloudEvents answered with an event of the function's name, or a web-standard fetch handler.
import { eventIntegrationTests, HTTP_INTEGRATION_TESTS } from './integration-tests';
import type { Template } from './project';

/** The function and its unit and integration tests, by path. */
export function javascriptFiles(name: string, template: Template): Record<string, string> {
  if (template === 'fetch') return { 'index.js': JS_FETCH_HANDLER, 'test/unit.js': JS_FETCH_UNIT, 'test/integration.js': JS_HTTP_INTEGRATION };
  const events = template === 'cloudevents';
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

const JS_FETCH_HANDLER = `'use strict';

/**
 * A web-standard (fetch) handler: funcrun calls fetch once per request, for every path and method
 * but its own probes, with a Request and the process environment, and sends the Response back.
 * A Hono app (\`module.exports = app\`) is served the same way.
 *
 * @type {import('funcrun').FetchHandler}
 */
module.exports = {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    ctx.log.info(\`\${request.method} \${url.pathname}\`);
    if (request.method === 'GET') return Response.json({ query: Object.fromEntries(url.searchParams) });
    const text = await request.text();
    try {
      return Response.json({ received: text === '' ? null : JSON.parse(text) });
    } catch {
      return Response.json({ error: 'the body is not JSON' }, { status: 400 });
    }
  },
};
`;

const JS_FETCH_UNIT = `'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { createFetchContext } = require('funcrun/testing');
const handler = require('../index.js');

test('GET answers with the query', async () => {
  const res = await handler.fetch(new Request('http://localhost/?name=tiger'), {}, createFetchContext());
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { query: { name: 'tiger' } });
});

test('POST answers with the body it received; a body that is not JSON is a 400', async () => {
  const post = (body) => new Request('http://localhost/', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const res = await handler.fetch(post('{"message":"hello"}'), {}, createFetchContext());
  assert.deepEqual(await res.json(), { received: { message: 'hello' } });
  assert.equal((await handler.fetch(post('{'), {}, createFetchContext())).status, 400);
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
