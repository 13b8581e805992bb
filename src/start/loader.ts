// Finding and loading a function project's module (CommonJS or ESM), and checking its shape
// once, at start, so a mistake is a one-line error instead of a failed request later.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkFunctions } from '../routing/functions';
import type * as ContractsModule from '../events/contracts';
import { isLogLevel } from '../log/log';
import { kindOf } from '../util/kind';
import { nearest } from './suggest';
import { importModule } from '../boot/code-cache';
import type { Function as FunctionModule, Invokable } from '../types';

export class LoadError extends Error {
  /** The module file that failed to load, when it got that far. */
  readonly file?: string;

  constructor(message: string, options?: { cause?: unknown; file?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LoadError';
    this.file = options?.file;
  }
}

export interface LoadedFunction {
  /** The function project's folder (where func.yaml is looked for). */
  folder: string;
  /** The module file that was loaded. */
  file: string;
  module: FunctionModule;
  /** Exports that look like a misspelled part of the function (`livness`), for a warning at start. */
  misspelled: string[];
  /** Which of two handlers the module exports is served, and why (`handle` beside `fetch`), for a warning at start. */
  shapeChosen?: string;
}

const EXPECTED = 'expected a handler: export a function, or an object with handle(), routes, functions or fetch()';

export interface Entry {
  /** The function project's folder (where func.yaml is looked for). */
  folder: string;
  /** The module file to load. */
  file: string;
  /** A TypeScript source file newer than the build output being loaded: the build is stale. */
  newerSource?: string;
  /** Why the TypeScript source runs rather than the build, or why it does not although asked. */
  note?: string;
}

// The function contract's TypeScript layout: the function is src/index.ts, compiled to
// package.json's "main", else to one of these.
const TS_SOURCE = join('src', 'index.ts');
const TS_BUILDS = [join('build', 'index.js'), join('build', 'src', 'index.js')];

/** Whether this node runs TypeScript files itself (type stripping: Node 22.18 and later, 24). */
export function canRunTypeScript(): boolean {
  return Boolean((process.features as { typescript?: unknown }).typescript);
}

const NO_TYPE_STRIPPING = strippingTurnedOff()
  ? `Node ${process.version} has type stripping turned off (--no-experimental-strip-types): remove that flag`
  : `Node ${process.version} cannot run TypeScript directly: use Node 22.18 or later (or 24)`;

// Lines that strip types by default: 22.18 and later, 23.6 and later.
function strippingTurnedOff(): boolean {
  const [major, minor] = process.versions.node.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 6) || (major === 22 && minor >= 18);
}

/** Whether a missing `path` is in the build output of a TypeScript project (`faas-js-runtime ./build/index.js` before `npm run build`). */
function unbuilt(path: string): boolean {
  if (!/\.[cm]?js$/.test(path)) return false;
  // The project is the nearest folder above with a package.json.
  for (let folder = dirname(path); ; folder = dirname(folder)) {
    if (existsSync(join(folder, 'package.json'))) return existsSync(join(folder, TS_SOURCE));
    if (dirname(folder) === folder) return false;
  }
}

/**
 * Resolves a project folder or a file to the module file to load. A TypeScript project (one with
 * src/index.ts) runs from its source when its build output is missing, or with `preferSource`
 * (--watch), on a node that strips types; otherwise from the build.
 */
export function resolveEntry(target: string, { preferSource = false } = {}): Entry {
  const path = resolve(target);
  let stats;
  try {
    stats = statSync(path);
  } catch {
    throw new LoadError(
      `${path}: no such file or folder${unbuilt(path) ? ": it is the TypeScript project's build, made by npm run build (or serve the project's folder to run src/index.ts without a build)" : ''}`,
    );
  }
  if (stats.isFile()) {
    if (/\.[cm]?ts$/.test(path) && !canRunTypeScript()) throw new LoadError(`${path}: ${NO_TYPE_STRIPPING}, or compile it and serve the output`);
    return { folder: dirname(path), file: path };
  }

  const source = join(path, TS_SOURCE);
  const hasSource = existsSync(source);
  if (hasSource && preferSource && canRunTypeScript()) return { folder: path, file: source, note: 'asked to run the source (--from-source or --watch)' };
  const ignored = hasSource && preferSource ? `${NO_TYPE_STRIPPING}: running the build, not ${TS_SOURCE}` : undefined;
  const manifest = join(path, 'package.json');
  if (existsSync(manifest)) {
    let main: unknown;
    try {
      main = (JSON.parse(readFileSync(manifest, 'utf8')) as { main?: unknown }).main;
    } catch (err) {
      throw new LoadError(`${manifest}: not valid JSON (${(err as Error).message})`);
    }
    if (typeof main === 'string' && main !== '') {
      let file: string | undefined;
      try {
        file = require.resolve(resolve(path, main));
      } catch {
        // Not built yet: a TypeScript project runs from its source.
      }
      if (file !== undefined) return { folder: path, file, newerSource: hasSource ? newerThan(join(path, 'src'), file) : undefined, note: ignored };
      if (!hasSource) throw new LoadError(`${manifest}: "main" is ${JSON.stringify(main)}, and no such file exists`);
      if (canRunTypeScript()) return { folder: path, file: source, note: `"main" (${main}) is not built` };
      throw new LoadError(
        `${manifest}: "main" is ${JSON.stringify(main)}, which is not built, and ${NO_TYPE_STRIPPING} to run ${TS_SOURCE} without a build, or build it first (npm run build)`,
      );
    }
  }
  for (const name of ['index.js', 'index.mjs', 'index.cjs']) {
    const file = join(path, name);
    if (existsSync(file)) return { folder: path, file };
  }
  // A TypeScript project without "main": its build where Knative's template compiles it (what its
  // `npm start` serves), or where tsc puts it with rootDir at the project.
  for (const built of hasSource ? TS_BUILDS : []) {
    const file = join(path, built);
    if (existsSync(file)) return { folder: path, file, newerSource: newerThan(join(path, 'src'), file), note: ignored };
  }
  if (hasSource && canRunTypeScript()) return { folder: path, file: source, note: 'there is no build' };
  throw new LoadError(
    hasSource
      ? `${path}: ${NO_TYPE_STRIPPING} to run ${TS_SOURCE}, or build it (npm run build) and set "main" in package.json to the output`
      : `${path}: no function found: expected index.js, or "main" in package.json`,
  );
}

const SOURCE_FILE = /^[^.].*(?<!\.d)\.[cm]?ts$/;

function modifiedAt(file: string): number {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
}

/**
 * The first TypeScript source under `folder` modified after `file` was, if any (looked at once,
 * at start). Hidden files (an editor's lock files) and declarations are not sources; a file that
 * cannot be read (a dangling link) is skipped: this is a hint, never a reason not to start.
 */
function newerThan(folder: string, file: string): string | undefined {
  const built = statSync(file).mtimeMs;
  const pending = [folder];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    let names;
    try {
      names = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of names) {
      const child = join(dir, entry.name);
      if (entry.isDirectory()) pending.push(child);
      else if (SOURCE_FILE.test(entry.name) && modifiedAt(child) > built) return child;
    }
  }
  return undefined;
}

/** Loads the module at `target` (a project folder or a file). */
export async function loadFunction(target: string): Promise<LoadedFunction> {
  const { folder, file } = resolveEntry(target);
  let namespace: unknown;
  try {
    // CommonJS is required directly: starting node's ESM loader costs a cold start ~10 ms.
    namespace = isCommonJs(file) ? require(file) : await importModule(pathToFileURL(file).href);
  } catch (err) {
    throw new LoadError(`${relativeName(file)}: failed to load: ${(err as Error)?.message ?? String(err)}`, { cause: err, file });
  }
  const module = toFunction(namespace);
  if (module === undefined) throw new LoadError(`${relativeName(file)}: ${EXPECTED}; ${foundInstead(namespace)}`, { file });
  checkFunction(module, file);
  return { folder, file, module, misspelled: misspelledExports(namespace), shapeChosen: shapeChosen(namespace, module) };
}

/**
 * When a module exports a `fetch` beside a handler of the other shapes (`handle`, named functions,
 * a function exported as the module), which one toFunction() serves and why, in one line.
 */
export function shapeChosen(exported: unknown, module: FunctionModule): string | undefined {
  if (exported === null || (typeof exported !== 'object' && typeof exported !== 'function')) return undefined;
  const ns = exported as Record<string, unknown>;
  const main = ns.default;
  const scopes = [ns, main].filter((value): value is Record<string, unknown> => value !== null && (typeof value === 'object' || typeof value === 'function'));
  const fetchBeside = scopes.some((scope) => typeof scope.fetch === 'function');
  if (module.fetch !== undefined) {
    // The only other handler a fetch handler can stand beside: the module, or its default export, being a function.
    const called = typeof exported === 'function' ? 'the exported function' : typeof main === 'function' ? 'the default export (a function)' : undefined;
    return called === undefined ? undefined : `${called} has a fetch method: fetch is served, and ${called} is never called`;
  }
  if (!fetchBeside) return undefined;
  const other = module.handle !== undefined ? 'handle' : module.functions !== undefined ? 'functions' : 'routes';
  return `the module exports both ${other} and fetch: ${other} is served, and fetch is never called (a fetch handler has no handle or functions beside fetch); export one of them`;
}

/** `livness: fn` beside `handle`: an export near a name funcrun reads, that funcrun will never call. */
function misspelledExports(exported: unknown): string[] {
  const out: string[] = [];
  const ns = exported as Record<string, unknown>;
  const scopes = [ns, ns.default].filter(
    (value): value is Record<string, unknown> => value !== null && (typeof value === 'object' || typeof value === 'function'),
  );
  for (const scope of scopes) {
    for (const name of Object.keys(scope)) {
      if ((PROPERTIES as readonly string[]).includes(name) || name === 'default' || name === '__esModule') continue;
      const meant = nearest(name, PROPERTIES);
      if (meant !== undefined && scope[meant] === undefined) out.push(`'${name}' is exported, but funcrun reads '${meant}': did you mean ${meant}?`);
    }
  }
  return out;
}

/** Whether node would load `file` as CommonJS: `.cjs`, or `.js` outside a `"type": "module"` package. */
function isCommonJs(file: string): boolean {
  if (file.endsWith('.cjs')) return true;
  if (!file.endsWith('.js')) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        return (JSON.parse(readFileSync(manifest, 'utf8')) as { type?: unknown }).type !== 'module';
      } catch {
        return true;
      }
    }
    if (dirname(dir) === dir) return true;
  }
}

/**
 * What a module without a handler exported instead, in words, with the export it most likely
 * meant as `handle` (`handler`, `hadle`, a default export without one).
 */
function foundInstead(exported: unknown): string {
  if (exported === null || (typeof exported !== 'object' && typeof exported !== 'function')) return `it exports ${kindOf(exported)}`;
  const ns = exported as Record<string, unknown>;
  // ESM: the default export, when there is one, is what the module means.
  const target = ns.default !== undefined && ns.default !== null && typeof ns.default === 'object' ? (ns.default as Record<string, unknown>) : ns;
  const names = Object.keys(target).filter((name) => name !== '__esModule');
  if (target.handle !== undefined) return `handle is ${kindOf(target.handle)}: it must be a function`;
  if (names.length === 0) return 'it exports nothing: module.exports = { handle } (or export function handle)';
  const shown = names.slice(0, 6).map((name) => `${name} (${kindOf(target[name], { shown: false })})`);
  const found = `found ${target === ns ? '' : 'a default export with '}${shown.join(', ')}${names.length > 6 ? ', …' : ''}`;
  const meant = nearest(
    'handle',
    names.filter((name) => typeof target[name] === 'function'),
    { prefixes: true },
  );
  return meant === undefined ? found : `${found}: did you mean handle? Rename ${meant} to handle`;
}

function relativeName(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel.startsWith('..') ? file : rel || file;
}

const PROPERTIES = [
  'handle',
  'routes',
  'init',
  'shutdown',
  'liveness',
  'readiness',
  'logLevel',
  'cors',
  'errorBody',
  'functions',
  'authorize',
  'events',
] as const;

function hasHandler(value: unknown): boolean {
  if (typeof value === 'function') return true;
  if (value === null || typeof value !== 'object') return false;
  const { handle, routes, functions } = value as Record<string, unknown>;
  return typeof handle === 'function' || (routes !== null && typeof routes === 'object') || (functions !== null && typeof functions === 'object');
}

/**
 * The function object from whatever a module exported: `module.exports = fn`,
 * `module.exports = { handle }`, ESM named exports, a default export (function or object),
 * and TypeScript's compiled `exports.default`. Undefined when there is no handler.
 */
export function toFunction(exported: unknown): FunctionModule | undefined {
  if (exported === null || (typeof exported !== 'object' && typeof exported !== 'function')) return undefined;
  const ns = exported as Record<string, unknown>;
  let main: unknown = ns.default;
  // TypeScript or Babel CommonJS output: module.exports = { __esModule: true, default: ... }.
  if (main !== null && typeof main === 'object' && (main as { __esModule?: unknown }).__esModule && !hasHandler(main)) {
    main = (main as { default?: unknown }).default;
  }
  const named: Record<string, unknown> = {};
  for (const key of PROPERTIES) if (ns[key] !== undefined) named[key] = ns[key];
  if (typeof exported === 'function') return isFetchHandler(exported) ? fetchModule(exported, {}) : collect(exported, {});
  // A fetch handler (a Hono app, `{ fetch }`), as the default export or as the module itself.
  if (named.handle === undefined && named.functions === undefined) {
    if (isFetchHandler(main)) return fetchModule(main, named);
    if (main === undefined && isFetchHandler(ns)) return fetchModule(ns, named);
  }
  if (typeof main === 'function') return collect(main, named);
  if (main !== null && typeof main === 'object' && hasHandler(main)) return { ...named, ...pick(main as Record<string, unknown>) };
  return hasHandler(named) ? (named as FunctionModule) : undefined;
}

// What a fetch module may declare beside its handler: its lifecycle and its event contracts, never routes or functions.
const FETCH_HOOKS = ['init', 'shutdown', 'liveness', 'readiness', 'logLevel', 'cors', 'errorBody', 'authorize', 'events'] as const;

/** An object (or function object) with a `fetch` method and no `handle` or `functions`: a Hono app, a Worker. */
function isFetchHandler(value: unknown): value is { fetch: NonNullable<FunctionModule['fetch']> } & Record<string, unknown> {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  const { fetch, handle, functions } = value as Record<string, unknown>;
  return typeof fetch === 'function' && handle === undefined && functions === undefined;
}

/**
 * A fetch handler's module: `fetch` bound to its handler, and the lifecycle hooks and `events` from the
 * module's named exports, else the handler's own (`module.exports = app; module.exports.init = ...`).
 * A Hono app's `routes` is its own route list, never read as funcrun's route table.
 */
function fetchModule(handler: { fetch: NonNullable<FunctionModule['fetch']> } & Record<string, unknown>, named: Record<string, unknown>): FunctionModule {
  const out: Record<string, unknown> = {};
  for (const key of FETCH_HOOKS) {
    const value = named[key] ?? handler[key];
    if (value !== undefined) out[key] = value;
  }
  out.fetch = handler.fetch.bind(handler);
  return out as FunctionModule;
}

function pick(source: Record<string, unknown>): FunctionModule {
  const out: Record<string, unknown> = {};
  for (const key of PROPERTIES) if (source[key] !== undefined) out[key] = source[key];
  return out as FunctionModule;
}

// A function exported alone is the handler, unless a named `handle` is exported beside it.
function collect(fn: unknown, named: Record<string, unknown>): FunctionModule {
  const own = pick(fn as Record<string, unknown>);
  return { ...own, ...named, handle: (named.handle ?? own.handle ?? fn) as Invokable };
}

/** Checks the shape once at start, naming the file and the property that is wrong. */
export function checkFunction(module: FunctionModule, file: string): void {
  const fail = (message: string): never => {
    throw new LoadError(`${relativeName(file)}: ${message}`);
  };
  for (const key of ['handle', 'fetch', 'init', 'shutdown', 'liveness', 'readiness', 'cors', 'errorBody', 'authorize'] as const) {
    if (module[key] !== undefined && typeof module[key] !== 'function') fail(`'${key}' must be a function, found ${kindOf(module[key])}`);
  }
  if (module.logLevel !== undefined && !isLogLevel(module.logLevel)) {
    fail(`'logLevel' is '${String(module.logLevel)}': expected one of fatal, error, warn, info, debug, trace, silent`);
  }
  for (const key of ['liveness', 'readiness'] as const) {
    const path = module[key]?.path;
    if (path !== undefined && (typeof path !== 'string' || !path.startsWith('/'))) fail(`'${key}.path' must be a path starting with '/'`);
  }
  if (module.functions !== undefined) checkFunctions(module.functions, fail);
  // Loaded for a module that declares events only (scripts/bundle.js ON_DEMAND).
  if (module.events !== undefined) (require('../events/contracts') as typeof ContractsModule).checkEventDeclaration(module.events, fail);
  if (module.routes !== undefined) {
    if (module.routes === null || typeof module.routes !== 'object') fail(`'routes' must be an object of 'METHOD /path' to handler`);
    for (const [key, handler] of Object.entries(module.routes)) {
      parseRouteKey(key, (message) => fail(`routes['${key}']: ${message}`));
      if (typeof handler !== 'function') fail(`routes['${key}'] must be a function`);
    }
  }
}

/** `'GET /items/:id'` to method and path; `'/items'` alone answers every method. */
export function parseRouteKey(key: string, fail: (message: string) => never): { method: string; path: string } {
  const m = /^\s*(?:([A-Za-z]+|\*)\s+)?(\/\S*)\s*$/.exec(key);
  if (m === null) fail(`expected 'METHOD /path', such as 'GET /items/:id'`);
  return { method: (m![1] ?? '*').toUpperCase(), path: m![2] };
}
