// A TypeScript project's tsconfig.json, function and tests: only syntax node can strip, so that
// node runs the source as it is and tsc builds the same code.
import { eventIntegrationTests, HTTP_INTEGRATION_TESTS } from './integration-tests';

/** tsconfig.json and tsconfig.build.json, the function and its unit and integration tests, by path. */
export function typescriptFiles(name: string, events: boolean): Record<string, string> {
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
