// A small router in the manner of trouter: patterns are compiled once when added, and
// `find(method, path)` is a pure loop that never touches a request, so it is tested without sockets.

export type Params = Record<string, string>;

export type Match<H> = { kind: 'found'; handler: H; params: Params } | { kind: 'method'; allow: string[] } | { kind: 'none' };

interface Route<H> {
  method: string; // upper case, or '*' for any method
  handler: H;
  keys: string[];
  pattern?: RegExp; // absent for a static path
}

/** Matches a path with its trailing slash removed, so `/items/` and `/items` are one route. */
function normalize(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

// Each segment brings its own leading slash, so an optional one is `(?:/([^/]*))?`: the slash and
// the value are absent together. (`/?([^/]*)` would let k optional segments split a long path
// segment k ways, and matching would take time n^k.)
function compile(path: string): { keys: string[]; pattern?: RegExp } {
  const keys: string[] = [];
  if (!path.includes(':') && !path.includes('*')) return { keys };
  const source = normalize(path)
    .split('/')
    .slice(1)
    .map((segment) => {
      if (segment === '*') {
        keys.push('*');
        return '/(.*)';
      }
      if (!segment.startsWith(':')) return '/' + segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const optional = segment.endsWith('?');
      keys.push(segment.slice(1, optional ? -1 : undefined));
      return optional ? '(?:/([^/]*))?' : '/([^/]+)';
    })
    .join('');
  return { keys, pattern: new RegExp(`^${source}/?$`) };
}

/** Percent-decodes a path segment or header value; malformed escapes leave it as it is. */
export function decodeComponent(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

const NONE = Object.freeze({ kind: 'none' as const });

export class Router<H> {
  readonly #static = new Map<string, Route<H>[]>();
  readonly #dynamic: Route<H>[] = [];
  /**
   * Whether a static path of each length is there (by length): a path of no static route's length
   * is not looked up, so that a fetch handler's path, which the probes' few routes seldom match in
   * length, is not hashed to learn it.
   */
  readonly #staticLength: boolean[] = [];

  /** Adds a route; `method` '*' answers every method. `path` may hold `:name`, `:name?` and a final `*`. */
  add(method: string, path: string, handler: H): this {
    if (!path.startsWith('/')) throw new Error(`route path '${path}' must start with '/'`);
    const route: Route<H> = { method: method.toUpperCase(), handler, ...compile(path) };
    if (route.pattern) this.#dynamic.push(route);
    else {
      const key = normalize(path);
      const list = this.#static.get(key) ?? [];
      list.push(route);
      this.#static.set(key, list);
      this.#staticLength[key.length] = true;
    }
    return this;
  }

  find(method: string, path: string): Match<H> {
    const key = normalize(path);
    let allow: string[] | undefined;
    const candidates = this.#staticLength[key.length] === true ? this.#static.get(key) : undefined;
    if (candidates !== undefined) {
      const route = pick(candidates, method);
      if (route) return { kind: 'found', handler: route.handler, params: {} };
      allow = methodsOf(candidates);
    }
    for (const route of this.#dynamic) {
      const m = route.pattern!.exec(key);
      if (m === null) continue;
      if (route.method === method || route.method === '*' || (method === 'HEAD' && route.method === 'GET')) {
        // A static route of another method does not hide a dynamic one of this method.
        const params: Params = {};
        route.keys.forEach((name, i) => {
          const value = m[i + 1];
          if (value !== undefined && (value !== '' || name === '*')) params[name] = decodeComponent(value);
        });
        return { kind: 'found', handler: route.handler, params };
      }
      (allow ??= []).push(...methodsOf([route]));
    }
    return allow === undefined ? NONE : { kind: 'method', allow: [...new Set(allow)] };
  }
}

function pick<H>(routes: Route<H>[], method: string): Route<H> | undefined {
  return (
    routes.find((r) => r.method === method) ?? (method === 'HEAD' ? routes.find((r) => r.method === 'GET') : undefined) ?? routes.find((r) => r.method === '*')
  );
}

function methodsOf<H>(routes: Route<H>[]): string[] {
  // HEAD is answered wherever GET is; list it beside GET.
  return routes.flatMap((r) => (r.method === 'GET' && !routes.some((o) => o.method === 'HEAD') ? ['GET', 'HEAD'] : [r.method]));
}
