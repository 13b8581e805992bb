// The request target as the context shows it: the path and the query, read one way by the
// server and by funcrun/testing's createContext.
import { searchParamsToObject } from '../body/body';

export interface Target {
  /** The path without the query string, as sent (an absolute-form target by its path). */
  path: string;
  /** The query string, without `?`, or undefined when there is none. */
  search: string | undefined;
}

/** Splits a request target (`/a?b=1`, or `http://host/a?b=1`) into path and query string. */
export function readTarget(raw: string): Target {
  const url = originForm(raw);
  const q = url.indexOf('?');
  return q === -1 ? { path: url, search: undefined } : { path: url.slice(0, q), search: url.slice(q + 1) };
}

/** The query as an object: a repeated key gives an array; `__proto__` is only a key. */
export function queryOf(search: string | undefined): Record<string, string | string[]> {
  return search === undefined ? {} : searchParamsToObject(new URLSearchParams(search));
}

/**
 * `GET http://host/path HTTP/1.1` (absolute form, RFC 9112 section 3.2.2) is routed by its path;
 * everything else is already a path (or `*`, which no route matches).
 */
export function originForm(url: string): string {
  if (url.charCodeAt(0) === 0x2f) return url;
  const scheme = url.indexOf('://');
  if (scheme === -1) return url;
  let end = scheme + 3;
  while (end < url.length && url[end] !== '/' && url[end] !== '?') end++;
  const rest = url.slice(end);
  return rest.startsWith('/') ? rest : '/' + rest;
}
