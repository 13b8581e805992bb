// Userinfo (`user:password@`) in endpoints and in free text: where it is, masked, and the secrets
// an endpoint's userinfo holds. Each scan is one pass, since the texts are a client's or a peer's
// (a quadratic regex held the service for 30 s on a 156 KiB username).
import { MASK } from './mask';
import { isSpace } from './matcher';

const isLetter = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
const isSchemeChar = (c: number) => isLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2e || c === 0x2d; // 0-9 + . -

/**
 * Where the userinfo of an endpoint value is, as [start, end) before its last `@`: after `scheme://`
 * or `//` when it has one, else from its start (`user:pw@host`, `https:user:pw@host`). The whole
 * value is one endpoint, so a password may hold spaces, `/` and `@`. Undefined without an `@`.
 */
function endpointUserinfo(value: string): [number, number] | undefined {
  const at = value.lastIndexOf('@');
  if (at <= 0) return undefined;
  let start = 0;
  while (start < at && isSpace(value.charCodeAt(start))) start++;
  let i = start;
  while (i < at && isSchemeChar(value.charCodeAt(i))) i++;
  if (i > start && isLetter(value.charCodeAt(start)) && value.startsWith('://', i) && i + 3 <= at) start = i + 3;
  else if (value.startsWith('//', start)) start += 2;
  return start < at ? [start, at] : undefined;
}

/**
 * An endpoint with its userinfo masked, in every form (`https://******@host`, `******@host`,
 * `//******@host`), and its query or fragment, where tokens travel (`https://host/?******`): an
 * endpoint with either is refused, but the request is logged as it came.
 */
export function maskEndpoint(value: string): string {
  const span = endpointUserinfo(value);
  const masked = span === undefined ? value : `${value.slice(0, span[0])}${MASK}${value.slice(span[1])}`;
  const rest = masked.slice(span === undefined ? 0 : span[0] + MASK.length);
  const query = rest.search(/[?#]/);
  return query === -1 || query + 1 === rest.length ? masked : `${masked.slice(0, masked.length - rest.length + query + 1)}${MASK}`;
}

/** The secrets in an endpoint's userinfo: the userinfo, the password, and their percent-decoded forms. */
export function endpointSecrets(value: string): string[] {
  const span = endpointUserinfo(value);
  if (span === undefined) return [];
  let userinfo = value.slice(span[0], span[1]);
  const out = [userinfo];
  // `https:user:pw`: the scheme without its slashes is no part of the credentials.
  const scheme = /^[a-z][a-z0-9+.-]{0,30}:/i.exec(userinfo)?.[0];
  if (scheme !== undefined && userinfo.indexOf(':', scheme.length) !== -1) userinfo = userinfo.slice(scheme.length);
  const colon = userinfo.indexOf(':');
  if (colon !== -1 && colon + 1 < userinfo.length) out.push(userinfo.slice(colon + 1));
  for (const text of [...out]) {
    try {
      const decoded = decodeURIComponent(text);
      if (decoded !== text) out.push(decoded);
    } catch {
      // not percent-encoded
    }
  }
  return out;
}

/**
 * Masks the userinfo of every URL in the text (`scheme://user:password@host` to `scheme://******@host`),
 * as `text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1******@')` would, in one pass. That
 * regex retries the scheme from each letter of a long word and the userinfo from each scheme before
 * it, so its time grows with the square of the text (a 156 KiB username held the service for 30 s).
 * Here each `://` is looked at once, and the characters scanned around one are never scanned again:
 * a scheme has no `:` or `/`, and a userinfo no `/`. (The Redactor masks more forms: `userinfoSpans`.)
 */
export function maskUserinfo(text: string): string {
  let out = '';
  let copied = 0; // text before this index is in `out`
  for (let at = text.indexOf('://'); at !== -1; at = text.indexOf('://', at + 1)) {
    // The scheme: from the first letter of the run of scheme characters that ends at `://`.
    let start = at;
    while (start > copied && isSchemeChar(text.charCodeAt(start - 1))) start--;
    while (start < at && !isLetter(text.charCodeAt(start))) start++;
    if (start === at) continue;
    // The userinfo: everything up to an '@' that comes before any white space or '/'.
    let end = at + 3;
    while (end < text.length && !isSpace(text.charCodeAt(end)) && text.charCodeAt(end) !== 0x2f && text.charCodeAt(end) !== 0x40) end++;
    if (end === text.length || text.charCodeAt(end) !== 0x40) continue;
    out += `${text.slice(copied, at + 3)}${MASK}@`;
    copied = end + 1;
    at = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

// Where a word that may hold userinfo ends: white space, quotes and brackets (as in JSON or HTML).
const isWordEnd = (c: number) =>
  isSpace(c) ||
  c === 0x22 ||
  c === 0x27 ||
  c === 0x60 ||
  c === 0x3c ||
  c === 0x3e ||
  c === 0x28 ||
  c === 0x29 ||
  c === 0x5b ||
  c === 0x5d ||
  c === 0x7b ||
  c === 0x7d;

/**
 * The userinfo in free text, in every form, as [start, end) pairs: in each word (up to white space,
 * a quote or a bracket), what comes before its last `@`, after `scheme://` or `//`, or from the word's
 * start when that holds a `:` (`user:pw@host`, `https:user:pw@host`). So a password with `/` or `@`
 * is masked whole. One pass: each character is looked at once. (A password with a space is a known
 * secret when it came in an endpoint: `secretValues` collects it.)
 */
export function userinfoSpans(text: string): number[] {
  const spans: number[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    while (i < n && isWordEnd(text.charCodeAt(i))) i++;
    const start = i;
    let lastAt = -1;
    let colonBeforeAt = -1; // the last ':' before lastAt
    let lastColon = -1;
    let separator = -1; // the first '://'
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (isWordEnd(c)) break;
      if (c === 0x40) {
        lastAt = i;
        colonBeforeAt = lastColon;
      } else if (c === 0x3a) {
        lastColon = i;
        if (separator === -1 && text.charCodeAt(i + 1) === 0x2f && text.charCodeAt(i + 2) === 0x2f) separator = i;
      }
    }
    if (lastAt <= start) continue;
    let from = start;
    let strong = false;
    if (separator !== -1 && separator + 3 <= lastAt) {
      from = separator + 3;
      strong = true;
    } else if (text.charCodeAt(start) === 0x2f && text.charCodeAt(start + 1) === 0x2f) {
      from = start + 2;
      strong = true;
    }
    if (from < lastAt && (strong || colonBeforeAt >= from)) spans.push(from, lastAt);
  }
  return spans;
}
