// The route table, built once at start from the module and the settings: probes, metrics, the
// module's `routes`, its named functions, and `handle` for every path no route claims; or for a
// fetch handler, `fetch` for every path but the probes' and metrics'.
import { Router } from './router';
import { parseRouteKey } from '../start/loader';
import { namedRoutes } from './functions';
import type { FetchEnv, Function as FunctionModule, HealthCheck, Invokable } from '../types';

/** What a request's route leads to. */
export type Destination =
  | { kind: 'function'; fn: Invokable; route?: string; streamBody: boolean }
  | { kind: 'fetch'; fetch: NonNullable<FunctionModule['fetch']>; env: FetchEnv }
  | { kind: 'probe'; check?: HealthCheck; readiness: boolean }
  | { kind: 'metrics' };

export type FunctionDestination = Extract<Destination, { kind: 'function' }>;
export type FetchDestination = Extract<Destination, { kind: 'fetch' }>;

export interface RouteTable {
  readonly router: Router<Destination>;
  /** `handle`, for a request no route claims; a fetch handler, for every request but the probes and metrics. */
  readonly fallback: FunctionDestination | FetchDestination | undefined;
}

export interface RoutePaths {
  livenessPath: string;
  readinessPath: string;
  /** Where metrics are served, when they are on. */
  metricsPath?: string;
}

/** Throws, naming the route, when two claim one path or a key does not parse. */
export function buildRoutes(module: FunctionModule, paths: RoutePaths, env: FetchEnv = {}): RouteTable {
  const router = new Router<Destination>();
  router.add('GET', paths.livenessPath, { kind: 'probe', check: module.liveness, readiness: false });
  router.add('GET', paths.readinessPath, { kind: 'probe', check: module.readiness, readiness: true });
  if (paths.metricsPath !== undefined) router.add('GET', paths.metricsPath, { kind: 'metrics' });
  if (module.fetch !== undefined) return { router, fallback: { kind: 'fetch', fetch: module.fetch, env } };
  const claimed = new Set<string>();
  for (const [key, fn] of Object.entries(module.routes ?? {})) {
    const { method, path } = parseRouteKey(key, (message) => {
      throw new Error(`routes['${key}']: ${message}`);
    });
    router.add(method, path, { kind: 'function', fn, route: path, streamBody: fn.streamBody === true });
    claimed.add(path);
  }
  for (const { method, path, handler, streamBody } of namedRoutes(module)) {
    if (claimed.has(path)) throw new Error(`routes and functions both claim ${path}`);
    router.add(method, path, { kind: 'function', fn: handler, route: path, streamBody });
  }
  const handle = module.handle as Invokable | undefined;
  return { router, fallback: handle ? { kind: 'function', fn: handle, streamBody: handle.streamBody === true } : undefined };
}
