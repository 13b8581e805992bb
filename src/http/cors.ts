// CORS for functions that export `cors()`: a list of allowed origins, read once at start.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CorsOrigin } from '../types';

// faas-js-runtime's list, in its order: clients written against it compare the header.
const METHODS = 'OPTIONS, GET, DELETE, POST, PUT, HEAD, PATCH';

export type OriginCheck = (origin: string) => boolean;

export function originCheck(origins: CorsOrigin[]): OriginCheck {
  if (!Array.isArray(origins)) throw new TypeError('cors() must return a list of origins');
  const exact = new Set<string>();
  const patterns: RegExp[] = [];
  let any = false;
  for (const origin of origins) {
    if (origin === '*') any = true;
    // A copy without `g` and `y`: with them test() keeps `lastIndex` from one request to the next,
    // and the same origin would be allowed on one request and refused on the next.
    else if (origin instanceof RegExp) patterns.push(new RegExp(origin.source, origin.flags.replace(/[gy]/g, '')));
    else if (typeof origin === 'string') exact.add(origin.replace(/\/$/, ''));
    else throw new TypeError(`cors() returned ${JSON.stringify(origin)}: expected origin strings or regular expressions`);
  }
  return (origin) => any || exact.has(origin) || patterns.some((p) => p.test(origin));
}

/** True when the request is a CORS preflight (OPTIONS with Origin and Access-Control-Request-Method). */
export function isPreflight(req: IncomingMessage): boolean {
  return req.method === 'OPTIONS' && req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;
}

/** Sets the response headers that let an allowed origin read the response. False when not allowed. */
export function allowOrigin(req: IncomingMessage, res: ServerResponse, allowed: OriginCheck): boolean {
  const origin = req.headers.origin;
  res.setHeader('vary', 'Origin');
  if (origin === undefined || !allowed(origin)) return false;
  res.setHeader('access-control-allow-origin', origin);
  res.setHeader('access-control-allow-methods', METHODS);
  if (req.method === 'OPTIONS') {
    const requested = req.headers['access-control-request-headers'];
    if (requested !== undefined) res.setHeader('access-control-allow-headers', requested);
    res.setHeader('access-control-max-age', '600');
  }
  return true;
}

/** faas-js-runtime's blanket CORS (compatibility mode only): every origin may read every answer. */
export function allowAnyOrigin(res: ServerResponse): void {
  res.setHeader('access-control-allow-origin', '*');
  res.setHeader('access-control-allow-methods', METHODS);
}
