// `funcrun create`: the function contract's project layouts, for JavaScript and TypeScript, HTTP and CloudEvents,
// with the deploy files, and a dependency on funcrun that installs whether or not funcrun is on
// the npm registry.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

export type Language = 'node' | 'typescript';
export type Template = 'http' | 'cloudevents';

export interface CreateOptions {
  language: Language;
  template: Template;
  /**
   * How the project depends on funcrun: a version range (`^0.1.0`), any other npm specifier, or
   * `pack`: this copy of funcrun packed into the project as `funcrun-<version>.tgz`, `file:` that.
   */
  funcrun: string;
}

/** This copy of funcrun: its folder and version. */
const PACKAGE_ROOT = join(__dirname, '..', '..');
const VERSION = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

// The image build files, copied from the ones funcrun ships, so the project builds with `docker build .`.
const DEPLOY = join(PACKAGE_ROOT, 'examples', 'deploy');
const DEPLOY_FILES = ['Dockerfile', '.dockerignore'];

/**
 * How a new project should depend on funcrun by default: a version range when this copy was
 * installed from a registry (the range then installs anywhere), else `pack` (a checkout, a
 * tarball or a link: funcrun may not be on any registry the project can reach).
 */
export function defaultDependency(): string {
  return installedFromRegistry(PACKAGE_ROOT) ? `^${VERSION}` : 'pack';
}

// npm records where each installed package came from in the install's hidden lockfile,
// node_modules/.package-lock.json (npx's cache, a project, or a global folder alike).
function installedFromRegistry(root: string): boolean {
  const at = root.indexOf(`${sep}node_modules${sep}`);
  if (at < 0) return false;
  const install = root.slice(0, at);
  try {
    const lock = JSON.parse(readFileSync(join(install, 'node_modules', '.package-lock.json'), 'utf8')) as {
      packages?: Record<string, { version?: unknown; resolved?: unknown }>;
    };
    const entry = lock.packages?.[relative(install, root).split(sep).join('/')];
    // A registry's tarball address is <registry>/funcrun/-/funcrun-<version>.tgz; a tarball
    // installed from any other address (or a file, a link, git) is not one a range can find.
    const resolved = entry?.resolved;
    return (
      entry?.version === VERSION && typeof resolved === 'string' && /^https?:\/\//.test(resolved) && resolved.endsWith(`/funcrun/-/funcrun-${VERSION}.tgz`)
    );
  } catch {
    return false;
  }
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
  if (existsSync(root) && !statSync(root).isDirectory()) throw new Error(`${root} is not a folder`);
  if (existsSync(root) && readdirSync(root).length > 0) {
    throw new Error(`${root} is not empty: create a function in a new or empty folder`);
  }
  const tarball = `funcrun-${VERSION}.tgz`;
  const dependency = options.funcrun === 'pack' ? `file:${tarball}` : options.funcrun;
  const files = projectFiles(functionName(root), { ...options, funcrun: dependency });
  // Packed first, so that a failure leaves no half-written project behind.
  const packed = options.funcrun === 'pack' ? packThisCopy(tarball) : undefined;
  try {
    for (const [name, content] of Object.entries(files)) {
      const file = join(root, name);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
    if (packed === undefined) return Object.keys(files);
    copyFileSync(join(packed, tarball), join(root, tarball));
    return [...Object.keys(files), tarball];
  } finally {
    if (packed !== undefined) rmSync(packed, { recursive: true, force: true });
  }
}

// npm pack writes exactly what the registry would hold (package.json "files"); no scripts run,
// so an installed copy packs as well as a checkout. Returns the temporary folder holding it.
function packThisCopy(tarball: string): string {
  const scratch = mkdtempSync(join(tmpdir(), 'funcrun-pack-'));
  try {
    execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', scratch, PACKAGE_ROOT], { stdio: ['ignore', 'ignore', 'pipe'] });
    if (!existsSync(join(scratch, tarball))) throw new Error(`it did not write ${tarball}`);
    return scratch;
  } catch (err) {
    rmSync(scratch, { recursive: true, force: true });
    const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim();
    throw new Error(`could not pack funcrun into the project with npm pack: ${stderr || (err as Error).message}`);
  }
}

/** The project's files by path. `created` is func.yaml's creation time. */
export function projectFiles(name: string, { language, template, funcrun }: CreateOptions, created = new Date()): Record<string, string> {
  const events = template === 'cloudevents';
  const ts = language === 'typescript';
  const files: Record<string, string> = {
    'func.yaml': funcYaml(name, language, events, created),
    'package.json': packageJson(name, ts, funcrun),
    'README.md': readme(name, ts, events, funcrun),
    '.gitignore': ts ? 'node_modules/\nbuild/\n' : 'node_modules/\n',
  };
  for (const file of DEPLOY_FILES) files[file] = readFileSync(join(DEPLOY, file), 'utf8');
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

// What Knative func writes at the top of a new func.yaml. Its schema requires specVersion, the
// version of func's last migration (a file below it is migrated as func reads it), and created
// (without it a function is "not initialized" to func). The schema link is to the commit whose
// schema spec/peers keeps and the specs check every func.yaml against.
const SPEC_VERSION = '0.36.0';
const SCHEMA = 'https://raw.githubusercontent.com/knative/func/c18d6045a1b0cb6c2b411f03082ab9ed20ba90b3/schema/func_yaml-schema.json';

// A name YAML would read as another type (`0x1f` is 31, `123`, `true`, `null`) is quoted: it is
// the function's name, and the source of the events it answers with.
function yamlText(value: string): string {
  return /^[a-z][a-z0-9-]*$/.test(value) && !['true', 'false', 'null', 'yes', 'no', 'on', 'off', 'y', 'n'].includes(value) ? value : `'${value}'`;
}

function funcYaml(name: string, language: Language, events: boolean, created: Date): string {
  return `# $schema: ${SCHEMA}
# yaml-language-server: $schema=${SCHEMA}
# The function's configuration, as Knative func reads it: funcrun reads run.envs and deploy.healthEndpoints.
specVersion: ${SPEC_VERSION}
name: ${yamlText(name)}
runtime: ${language}
created: ${created.toISOString()}
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

// The TypeScript projects' dev tools; funcrun's own development uses the same ranges.
const TYPESCRIPT_TOOLS = { '@types/node': '^22.18.0', typescript: '~5.9.3' };

function packageJson(name: string, ts: boolean, funcrun: string): string {
  const manifest = {
    name,
    version: '0.1.0',
    private: true,
    // TypeScript projects are ES modules: node runs src/*.ts as they are, and tsc builds the same.
    ...(ts ? { type: 'module' } : {}),
    main: ts ? 'build/src/index.js' : 'index.js',
    scripts: ts
      ? { start: 'funcrun serve .', dev: 'funcrun serve --watch .', test: 'node --test test/*.ts', typecheck: 'tsc --noEmit', build: 'tsc' }
      : { start: 'funcrun serve .', dev: 'funcrun serve --watch .', test: 'node --test test/*.js' },
    dependencies: { funcrun },
    ...(ts ? { devDependencies: TYPESCRIPT_TOOLS } : {}),
    // Type stripping, which runs the TypeScript source without a build, is on from 22.18.
    engines: { node: ts ? '>=22.18' : '>=22' },
  };
  return JSON.stringify(manifest, null, 2) + '\n';
}

function readme(name: string, ts: boolean, events: boolean, funcrun: string): string {
  const call = events
    ? `npx funcrun invoke --format cloudevent --type dev.example.${name} --data '{"message": "hello"}'`
    : `curl -H 'content-type: application/json' -d '{"message": "hello"}' http://localhost:8080/`;
  const tarball = funcrun.startsWith('file:') && funcrun.endsWith('.tgz') ? funcrun.slice('file:'.length) : undefined;
  return `# ${name}

${events ? 'A CloudEvent' : 'An HTTP'} function in ${ts ? 'TypeScript' : 'JavaScript'}, served by funcrun.

\`\`\`sh
npm install
npm test                  # unit and integration tests${ts ? ', run from the TypeScript source' : ''}
npm start                 # serves on http://localhost:8080 (PORT to change it)
${call}
npm run dev               # the same, restarting when a file changes
docker build -t ${name} . && docker run --rm -p 8080:8080 ${name}
\`\`\`

- \`${ts ? 'src/index.ts' : 'index.js'}\`: the function. Edit \`handle\`.
- \`func.yaml\`: \`run.envs\` (such as \`FUNC_LOG_LEVEL\`) and the health endpoints; edit it with
  \`npx funcrun config envs add --name NAME --value VALUE\` and \`npx funcrun config health\`.
- \`test/unit.${ts ? 'ts' : 'js'}\` calls \`handle\` with a context from \`funcrun/testing\`;
  \`test/integration.${ts ? 'ts' : 'js'}\` serves the function on a free port and calls it over HTTP.
${
  ts
    ? `- No build step while developing: Node 22.18 and later run \`src/*.ts\` as they are (type
  stripping: types, no enums or namespaces; relative imports name the \`.ts\` file).
  \`npm run typecheck\` checks the types; \`npm run build\` compiles to \`build/\`, which
  \`npm start\` then serves, as the image does (funcrun warns when the source is newer).
`
    : ''
}- \`Dockerfile\`, \`.dockerignore\`: the image, as funcrun ships them; non-root, production
  dependencies only. A Knative \`Service\` like funcrun's \`examples/deploy/service.yaml\` runs it;
  its probes use the paths in func.yaml.
${
  tarball === undefined
    ? ''
    : `- \`${tarball}\`: funcrun itself, packed into the project because it was not installed from
  a registry; commit it with the project (the image build uses it). Once funcrun is on your
  registry, \`npm install funcrun@latest\` replaces it with a version range; delete the file then.
`
}`;
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
  // Only syntax node can strip (no enums, namespaces or parameter properties), and relative imports
  // that name the .ts file: node runs src/ and test/ as they are, and tsc builds the same code.
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
