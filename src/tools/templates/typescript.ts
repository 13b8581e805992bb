// A TypeScript project's tsconfig.json, function and tests: only syntax node can strip, so that
// node runs the source as it is and tsc builds the same code.
import { eventIntegrationTests, HTTP_INTEGRATION_TESTS } from './integration-tests';
import type { Template } from './project';

/** tsconfig.json and tsconfig.build.json, the function and its unit and integration tests, by path. */
export function typescriptFiles(name: string, template: Template): Record<string, string> {
  if (template === 'fetch') {
    return {
      'tsconfig.json': TSCONFIG_FETCH,
      'tsconfig.build.json': TSCONFIG_BUILD,
      'src/index.ts': TS_FETCH_HANDLER,
      'test/unit.ts': TS_FETCH_UNIT,
      'test/integration.ts': TS_HTTP_INTEGRATION,
    };
  }
  const events = template === 'cloudevents';
  return {
    'tsconfig.json': TSCONFIG,
    'tsconfig.build.json': TSCONFIG_BUILD,
    'src/index.ts': events ? tsEventHandler(name) : TS_HTTP_HANDLER,
    'test/unit.ts': events ? tsEventUnit(name) : TS_HTTP_UNIT,
    'test/integration.ts': events ? tsEventIntegration(name) : TS_HTTP_INTEGRATION,
  };
}

// tsconfig.json checks the function and its tests (the editor, npm run typecheck) and emits
// nothing; tsconfig.build.json (npm run build) compiles the function alone, src/ into build/.
const TSCONFIG = `{
  // Only syntax node can strip (no enums, namespaces or parameter properties), and relative imports
  // that name the .ts file: node runs src/ and test/ as they are, and tsc builds the same code.
  // This file checks src/ and test/ (the editor, npm run typecheck); npm run build compiles src/
  // alone, by tsconfig.build.json, so that no test is in build/ or the image.
  "compilerOptions": {
    "target": "ES2022",
    "module": "nodenext",
    "strict": true,
    "esModuleInterop": true,
    "skipLibCheck": true,
    "verbatimModuleSyntax": true,
    "erasableSyntaxOnly": true,
    "rewriteRelativeImportExtensions": true,
    "types": ["node"],
    "noEmit": true
  },
  "include": ["src/**/*.ts", "test/**/*.ts"]
}
`;

// A fetch handler's Request and Response are the web's: the DOM library's types, which node's
// globals implement.
const TSCONFIG_FETCH = TSCONFIG.replace('"types": ["node"],', '"lib": ["ES2022", "DOM", "DOM.Iterable"],\n    "types": ["node"],');

const TSCONFIG_BUILD = `{
  // npm run build: the function, src/ into build/ (build/index.js, package.json's main); the
  // tests are checked by tsconfig.json and run from their source.
  "extends": "./tsconfig.json",
  "compilerOptions": {
    "noEmit": false,
    "rootDir": "src",
    "outDir": "build"
  },
  "include": ["src/**/*.ts"]
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
import { handle } from '../src/index.ts';

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

const TS_FETCH_HANDLER = `import type { FetchContext, FetchEnv, FetchHandler } from 'funcrun';

/**
 * A web-standard (fetch) handler: funcrun calls fetch once per request, for every path and method
 * but its own probes, with a Request and the process environment, and sends the Response back.
 * A Hono app (\`export default app\`) is served the same way.
 */
const handler: FetchHandler = {
  async fetch(request: Request, env: FetchEnv, ctx: FetchContext): Promise<Response> {
    const url = new URL(request.url);
    ctx.log.info(\`\${request.method} \${url.pathname}\`);
    if (request.method === 'GET') return Response.json({ query: Object.fromEntries(url.searchParams) });
    const text = await request.text();
    try {
      return Response.json({ received: text === '' ? null : (JSON.parse(text) as unknown) });
    } catch {
      return Response.json({ error: 'the body is not JSON' }, { status: 400 });
    }
  },
};

export default handler;
`;

const TS_FETCH_UNIT = `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createFetchContext } from 'funcrun/testing';
import handler from '../src/index.ts';

const post = (body: string) => new Request('http://localhost/', { method: 'POST', headers: { 'content-type': 'application/json' }, body });

test('GET answers with the query', async () => {
  const res = await handler.fetch(new Request('http://localhost/?name=tiger'), {}, createFetchContext());
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), { query: { name: 'tiger' } });
});

test('POST answers with the body it received; a body that is not JSON is a 400', async () => {
  const res = await handler.fetch(post('{"message":"hello"}'), {}, createFetchContext());
  assert.deepEqual(await res.json(), { received: { message: 'hello' } });
  assert.equal((await handler.fetch(post('{'), {}, createFetchContext())).status, 400);
});
`;

const TS_HTTP_INTEGRATION = `import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startFunction, type RunningFunction } from 'funcrun/testing';

// The source, as node runs it (node --test test/*.ts), with the project's func.yaml.
const folder = path.join(import.meta.dirname, '..');
let running: RunningFunction;
before(async () => {
  running = await startFunction(path.join(folder, 'src', 'index.ts'), { config: folder });
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
import { handle } from '../src/index.ts';

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

// The source, as node runs it (node --test test/*.ts), with the project's func.yaml.
const folder = path.join(import.meta.dirname, '..');
let running: RunningFunction;
before(async () => {
  running = await startFunction(path.join(folder, 'src', 'index.ts'), { config: folder });
});
after(() => running.close());

${eventIntegrationTests(name)}`;
}
