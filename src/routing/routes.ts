// The route table, built once at start from the module and the settings: probes, metrics, the
// module's `routes`, its named functions, and `handle` for every path no route claims; or for a
// fetch handler, `fetch` for every path but the probes' and metrics'.
import type { CloudEvent } from 'cloudevents';
import { decodeComponent, Router } from './router';
import { parseRouteKey } from '../start/loader';
import { namedRoutes } from './functions';
import type { FetchEnv, Function as FunctionModule, HealthCheck, Invokable } from '../types';

/** What a request's route leads to. */
export type Destination =
  | { kind: 'function'; fn: Invokable; route?: string; streamBody: boolean; routeEvent?: (event: CloudEvent<unknown>) => void }
  | { kind: 'fetch'; fetch: NonNullable<FunctionModule['fetch']>; env: FetchEnv }
  | { kind: 'probe'; check?: HealthCheck; readiness: boolean }
  | { kind: 'metrics' };

export type FunctionDestination = Extract<Destination, { kind: 'function' }>;
export type FetchDestination = Extract<Destination, { kind: 'fetch' }>;

export interface RouteTable {
  readonly router: Router<Destination>;
  /** `handle`, for a request no route claims; a fetch handler, for every request but the probes and metrics. */
  readonly fallback: FunctionDestination | FetchDestination | undefined;
  /** The paths that could resolve to a runtime path (lookalikes()): runtimePathOf() resolves those only. */
  readonly lookalike: RegExp;
}

export interface RoutePaths {
  livenessPath: string;
  readinessPath: string;
  /** Where metrics are served, when they are on. */
  metricsPath?: string;
}

// A path a reader may resolve otherwise than it is spelled: a `.` segment (`%2e` too), a backslash
// (`/` to WHATWG URL), a fragment, an escape. Asked of a target that is not plain (target.ts).
const SPELLED_OTHERWISE = /\/\.|[%\\#]/;

/**
 * The runtime path (a probe's, the metrics') that `path` resolves to without being spelled as it,
 * if it does: read as a fetch handler's `request.url` reads it (WHATWG URL: `.` and `..` segments,
 * `%2e` among them, resolved, `\` as `/`, no fragment), or that percent-decoded, as routers match
 * it. Such a request is neither the runtime's (its paths are matched as sent) nor the function's.
 * Only a path spelled otherwise that could be a runtime path's lookalike is resolved.
 */
export function runtimePathOf(routes: RouteTable, path: string): string | undefined {
  if (!SPELLED_OTHERWISE.test(path) || !routes.lookalike.test(path)) return undefined;
  let resolved: string;
  try {
    // Joined to an origin, as the Request's URL is: `//x` stays a path, not a host.
    resolved = new URL(`http://localhost${path}`).pathname;
  } catch {
    return undefined;
  }
  for (const candidate of [resolved, decodeComponent(resolved)]) {
    const match = routes.router.find('GET', candidate);
    if (match.kind === 'found' && (match.handler.kind === 'probe' || match.handler.kind === 'metrics')) return candidate;
  }
  return undefined;
}

// What, first after the slash, may give a path's first segment another reading: a `.` segment's
// character, an escape, a backslash, a fragment, an empty segment.
const READ_OTHERWISE = '.%\\#/';
// A `..` segment, however spelled: it removes the segment before it, whatever that was.
const DOT_DOT = String.raw`[/\\](?:\.|%2[eE]){2}(?:[/\\#]|$)`;

/**
 * The paths runtimePathOf() resolves, made once from the runtime paths. A path's first segment
 * is read with its first character as spelled (escaped by WHATWG URL at most, and decoded back)
 * unless that character is one of READ_OTHERWISE or a later `..` segment removes the segment; so
 * only a path that begins as a runtime path does, or with one of those, or has a `..` segment,
 * can resolve to one. A runtime path that begins with an escape may stand for any character: then
 * every path is resolved.
 */
function lookalikes(runtimePaths: readonly string[]): RegExp {
  const firsts = runtimePaths.map((path) => path.charAt(1));
  if (firsts.includes('%')) return /^/;
  const lead = [...new Set(firsts.join('') + READ_OTHERWISE)].map((c) => c.replace(/[\\\]^-]/, '\\$&')).join('');
  return new RegExp(`^/[${lead}]|${DOT_DOT}`);
}

/** Throws, naming the route, when two claim one path or a key does not parse. */
export function buildRoutes(module: FunctionModule, paths: RoutePaths, env: FetchEnv = {}): RouteTable {
  const router = new Router<Destination>();
  router.add('GET', paths.livenessPath, { kind: 'probe', check: module.liveness, readiness: false });
  router.add('GET', paths.readinessPath, { kind: 'probe', check: module.readiness, readiness: true });
  if (paths.metricsPath !== undefined) router.add('GET', paths.metricsPath, { kind: 'metrics' });
  const lookalike = lookalikes([paths.livenessPath, paths.readinessPath, paths.metricsPath].filter((path): path is string => path !== undefined));
  if (module.fetch !== undefined) return { router, fallback: { kind: 'fetch', fetch: module.fetch, env }, lookalike };
  // Paths as the router matches them: a trailing slash is the same route.
  const claimed = new Set<string>();
  const asMatched = (path: string) => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);
  for (const [key, fn] of Object.entries(module.routes ?? {})) {
    const { method, path } = parseRouteKey(key, (message) => {
      throw new Error(`routes['${key}']: ${message}`);
    });
    router.add(method, path, { kind: 'function', fn, route: path, streamBody: fn.streamBody === true });
    claimed.add(asMatched(path));
  }
  // The runtime's own paths answer their GET first: a function there would get every other method only.
  const runtime = new Map(
    [
      [paths.livenessPath, 'liveness probe'],
      [paths.readinessPath, 'readiness probe'],
      [paths.metricsPath, 'metrics'],
    ].filter((entry): entry is [string, string] => entry[0] !== undefined),
  );
  for (const { method, path, handler, streamBody, routeEvent } of namedRoutes(module)) {
    if (claimed.has(asMatched(path))) throw new Error(`routes and functions both claim ${path}`);
    const taken = runtime.get(asMatched(path));
    if (taken !== undefined)
      throw new Error(`the function at ${path} is where the ${taken} answers: rename the function, or move the ${taken} (docs/lifecycle.md)`);
    router.add(method, path, { kind: 'function', fn: handler, route: path, streamBody, routeEvent });
  }
  const handle = module.handle as Invokable | undefined;
  return { router, fallback: handle ? { kind: 'function', fn: handle, streamBody: handle.streamBody === true } : undefined, lookalike };
}
