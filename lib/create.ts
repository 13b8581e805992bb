// `funcrun create`: the seed's project layouts, for JavaScript and TypeScript, HTTP and CloudEvents.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

export type Language = 'node' | 'typescript';
export type Template = 'http' | 'cloudevents';

export interface CreateOptions {
  language: Language;
  template: Template;
  /** The version range of funcrun the project depends on. */
  funcrunVersion: string;
}

/** A name func.yaml, package.json and event types can carry: lowercase letters, digits and dashes. */
export function functionName(folder: string): string {
  const name = basename(resolve(folder))
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return name || 'function';
}

/** Writes the project into `folder` (created if missing; refused if not empty). Returns the files written. */
export function createProject(folder: string, options: CreateOptions): string[] {
  const root = resolve(folder);
  if (existsSync(root) && readdirSync(root).length > 0) {
    throw new Error(`${root} is not empty: create a function in a new or empty folder`);
  }
  const files = projectFiles(functionName(root), options);
  for (const [name, content] of Object.entries(files)) {
    const file = join(root, name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
  return Object.keys(files);
}

export function projectFiles(name: string, { language, template, funcrunVersion }: CreateOptions): Record<string, string> {
  const events = template === 'cloudevents';
  const ts = language === 'typescript';
  const files: Record<string, string> = {
    'func.yaml': funcYaml(name, language, events),
    'package.json': packageJson(name, ts, funcrunVersion),
    'README.md': readme(name, ts, events),
    '.gitignore': ts ? 'node_modules/\nbuild/\n' : 'node_modules/\n',
  };
  if (ts) {
    files['tsconfig.json'] = TSCONFIG;
    files['src/index.ts'] = events ? tsEventHandler(name) : TS_HTTP_HANDLER;
    files['test/unit.ts'] = events ? tsEventUnit(name) : TS_HTTP_UNIT;
    files['test/integration.ts'] = events ? tsEventIntegration(name) : TS_HTTP_INTEGRATION;
  } else {
    files['index.js'] = events ? jsEventHandler(name) : JS_HTTP_HANDLER;
    files['test/unit.js'] = events ? jsEventUnit(name) : JS_HTTP_UNIT;
    files['test/integration.js'] = events ? jsEventIntegration(name) : JS_HTTP_INTEGRATION;
  }
  return files;
}

function funcYaml(name: string, language: Language, events: boolean): string {
  return `# The function's configuration: funcrun reads run.envs and deploy.healthEndpoints.
name: ${name}
runtime: ${language}
invoke: ${events ? 'cloudevent' : 'http'}
run:
  envs:
    # fatal, error, warn, info, debug, trace or silent: funcrun config envs add --name FUNC_LOG_LEVEL --value debug
    - name: FUNC_LOG_LEVEL
      value: info
deploy:
  healthEndpoints:
    liveness: /health/liveness
    readiness: /health/readiness
`;
}

function packageJson(name: string, ts: boolean, funcrunVersion: string): string {
  const manifest = {
    name,
    version: '0.1.0',
    private: true,
    main: ts ? 'build/src/index.js' : 'index.js',
    scripts: ts
      ? { build: 'tsc', start: 'tsc && funcrun serve .', test: 'tsc && node --test build/test/*.js' }
      : { start: 'funcrun serve .', test: 'node --test test/*.js' },
    dependencies: { funcrun: funcrunVersion },
    ...(ts ? { devDependencies: { '@types/node': '^20.19.0', typescript: '~5.9.3' } } : {}),
    engines: { node: '>=22' },
  };
  return JSON.stringify(manifest, null, 2) + '\n';
}

function readme(name: string, ts: boolean, events: boolean): string {
  const call = events
    ? `funcrun invoke --format cloudevent --type dev.example.${name} --data '{"message": "hello"}'`
    : `curl -H 'content-type: application/json' -d '{"message": "hello"}' http://localhost:8080/`;
  return `# ${name}

A ${events ? 'CloudEvent' : 'HTTP'} function in ${ts ? 'TypeScript' : 'JavaScript'}, served by funcrun.

\`\`\`sh
npm install
npm start                 # ${ts ? 'compiles, then serves' : 'serves'} on http://localhost:8080
${call}
npm test                  # unit and integration tests
\`\`\`

- \`${ts ? 'src/index.ts' : 'index.js'}\`: the function. Edit \`handle\`.
- \`func.yaml\`: \`run.envs\` (such as \`FUNC_LOG_LEVEL\`) and the health endpoints; edit it with
  \`funcrun config envs add --name NAME --value VALUE\` and \`funcrun config health\`.
- \`test/unit.${ts ? 'ts' : 'js'}\` calls \`handle\` with a context from \`funcrun/testing\`;
  \`test/integration.${ts ? 'ts' : 'js'}\` serves the function on a free port and calls it over HTTP.

To deploy: build an image with funcrun's \`examples/deploy/Dockerfile\` and apply a Knative
\`Service\` like \`examples/deploy/service.yaml\`, whose probes use the paths in func.yaml.
`;
}

// The integration tests are the same in JavaScript and TypeScript; only their imports differ.
const HTTP_INTEGRATION_TESTS = `test('POST with JSON answers 200 with the body', async () => {
  const res = await fetch(running.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":"hello"}' });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { received: { message: 'hello' } });
});

test('the readiness probe answers at the path in func.yaml', async () => {
  const res = await fetch(running.url + '/health/readiness');
  assert.equal(res.status, 200);
});
`;

function eventIntegrationTests(name: string): string {
  return `test('a binary CloudEvent is answered with one', async () => {
  const res = await fetch(running.url, {
    method: 'POST',
    headers: { 'ce-id': '1', 'ce-source': '/test', 'ce-type': 'dev.example.${name}', 'ce-specversion': '1.0', 'content-type': 'application/json' },
    body: '{"message":"hello"}',
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('ce-type'), 'dev.example.${name}.response');
  assert.deepEqual(await res.json(), { received: { message: 'hello' } });
});

test('a plain request is a 400', async () => {
  const res = await fetch(running.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 400);
});
`;
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

const TSCONFIG = `{
  "compilerOptions": {
    "target": "ES2022",
    "module": "node16",
    "moduleResolution": "node16",
    "strict": true,
    "esModuleInterop": true,
    "skipLibCheck": true,
    "types": ["node"],
    "rootDir": ".",
    "outDir": "build"
  },
  "include": ["src/**/*.ts", "test/**/*.ts"]
}
`;

const TS_HTTP_HANDLER = `import type { Context, HTTPFunction } from 'funcrun';

/** An HTTP function: funcrun calls it once per request, with the body parsed by its content type. */
export const handle: HTTPFunction = (context: Context, body?: unknown) => {
  context.log.info(\`\${context.method} \${context.path}\`);
  if (context.method === 'GET') return { query: { ...context.query } };
  return { received: body ?? null };
};
`;

const TS_HTTP_UNIT = `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createContext } from 'funcrun/testing';
import { handle } from '../src/index';

test('GET answers with the query', async () => {
  const result = await handle(createContext({ url: '/?name=tiger' }));
  assert.deepEqual(result, { query: { name: 'tiger' } });
});

test('POST answers with the body it received', async () => {
  const body = { message: 'hello' };
  const result = await handle(createContext({ method: 'POST', body }), body);
  assert.deepEqual(result, { received: body });
});
`;

const TS_HTTP_INTEGRATION = `import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startFunction, type RunningFunction } from 'funcrun/testing';

// Compiled to build/test/: the project folder is two levels up.
const folder = path.join(__dirname, '..', '..');
let running: RunningFunction;
before(async () => {
  running = await startFunction(folder, { config: folder });
});
after(() => running.close());

${HTTP_INTEGRATION_TESTS}`;

function tsEventHandler(name: string): string {
  return `import type { CloudEventFunction, Context } from 'funcrun';

/** A CloudEvent function: funcrun calls it once per event, with the event's data. */
export const handle: CloudEventFunction = (context: Context, data?: unknown) => {
  const event = context.cloudevent;
  if (!event) {
    throw Object.assign(new Error('expected a CloudEvent'), { statusCode: 400 });
  }
  context.log.info({ id: event.id, type: event.type });
  return context.cloudEventResponse({ received: data ?? null }).type('dev.example.${name}.response').source('/${name}').response();
};
`;
}

function tsEventUnit(name: string): string {
  return `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createContext, CloudEvent } from 'funcrun/testing';
import { handle } from '../src/index';

test('an event is answered with an event carrying its data', async () => {
  const event = new CloudEvent({ type: 'dev.example.${name}', source: '/test', data: { message: 'hello' } });
  const answer = (await handle(createContext({ method: 'POST', cloudevent: event }), event.data)) as CloudEvent<unknown>;
  assert.equal(answer.type, 'dev.example.${name}.response');
  assert.deepEqual(answer.data, { received: { message: 'hello' } });
});

test('a plain request is a 400', () => {
  assert.throws(() => handle(createContext({ method: 'POST' }), {}), (err: { statusCode?: number }) => err.statusCode === 400);
});
`;
}

function tsEventIntegration(name: string): string {
  return `import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startFunction, type RunningFunction } from 'funcrun/testing';

const folder = path.join(__dirname, '..', '..');
let running: RunningFunction;
before(async () => {
  running = await startFunction(folder, { config: folder });
});
after(() => running.close());

${eventIntegrationTests(name)}`;
}
