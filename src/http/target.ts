// The request target as the context shows it: the path and the query, read one way by the
// server and by funcrun/testing's createContext.
import { formParams, searchParamsToObject } from '../body/body';

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

// The characters the URL standard writes as they are in a path and a query (light-request.ts).
export const URL_KEEPS = new Uint8Array(128);
for (const c of '!$%&()*+,-./0123456789:;=?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz|~') URL_KEEPS[c.charCodeAt(0)] = 1;

/** A request target read once: its path and query string, and whether it is plain (scanTarget()). */
export interface ScannedTarget extends Target {
  readonly plain: boolean;
}

/**
 * readTarget() of a request target, and whether it is plain: origin-form (`/` first) and taken by
 * every reader as it is spelled, with only characters the URL standard keeps, no escape (`%`), no
 * `.` after a `/` (a dot segment's start); so no `\\` or `#` either. Such a target is its own path
 * and query, and a Request's URL after the origin. One scan, which finds the query's start too.
 */
export function scanTarget(raw: string): ScannedTarget {
  if (raw.charCodeAt(0) !== 0x2f) {
    const { path, search } = readTarget(raw);
    return { path, search, plain: false };
  }
  let q = -1;
  let plain = true;
  for (let i = 1; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 0x3f && q === -1) q = i;
    if (c >= 128 || URL_KEEPS[c] === 0 || c === 0x25 || (c === 0x2e && raw.charCodeAt(i - 1) === 0x2f)) {
      plain = false;
      if (q === -1) q = raw.indexOf('?', i);
      break;
    }
  }
  return q === -1 ? { path: raw, search: undefined, plain } : { path: raw.slice(0, q), search: raw.slice(q + 1), plain };
}

/** The query as an object: a repeated key gives an array; `__proto__` is only a key. */
export function queryOf(search: string | undefined): Record<string, string | string[]> {
  return search === undefined ? {} : searchParamsToObject(formParams(search));
}

/**
 * `GET http://host/path HTTP/1.1` (absolute form, RFC 9112 section 3.2.2) is routed by its path;
 * everything else is already a path (or `*`, which no route matches).
 */
export function originForm(url: string): string {
  const authority = authorityIn(url);
  if (authority === undefined) return url;
  const rest = url.slice(authority.end);
  return rest.startsWith('/') ? rest : '/' + rest;
}

/** Where an absolute-form target's authority is (`user@host:80` in `http://user@host:80/p?q`); undefined for any other target. */
export function authorityIn(url: string): { start: number; end: number } | undefined {
  if (url.charCodeAt(0) === 0x2f) return undefined;
  const scheme = url.indexOf('://');
  if (scheme === -1) return undefined;
  const start = scheme + 3;
  let end = start;
  while (end < url.length && url[end] !== '/' && url[end] !== '?') end++;
  return { start, end };
}
