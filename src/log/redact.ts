// What the log shows of a request and of a thrown value: enough to recognise them, never a
// credential. A URL keeps its path and its query's names (values, a fragment and userinfo often
// carry tokens); a thrown value from the request is described by its keys; any other is JSON of a
// bounded size with credential keys redacted.
import type { IncomingMessage } from 'node:http';
import { authorityIn } from '../http/target';
import { isCredentialKey, REDACTED } from './serializers';

/** Written for a value that cannot be read at all. */
export const UNREADABLE = '[unreadable value]';

// A thrown value described in the log: enough to recognise it, not a whole request body.
const MAX_DESCRIPTION = 2048;
// Values of a thrown object written at most: one sharing references expands exponentially as text.
const MAX_DESCRIBED_VALUES = 1000;
// Keys of a thrown request value named at most.
const MAX_KEYS_NAMED = 20;

/** A thrown value that is not an Error, as text for the log: credentials redacted, bounded. */
export function describeThrown(value: unknown): string {
  try {
    let left = MAX_DESCRIBED_VALUES;
    const replacer = (key: string, v: unknown): unknown => {
      if (--left < 0) throw new RangeError('too large to describe');
      return key !== '' && isCredentialKey(key) ? REDACTED : v;
    };
    const text = typeof value === 'string' ? value : (JSON.stringify(value, replacer) ?? String(value));
    return text.length > MAX_DESCRIPTION ? text.slice(0, MAX_DESCRIPTION) + '…' : text;
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return UNREADABLE;
    }
  }
}

/** A thrown value that came from the request: what it is and its first keys, never its values. */
export function describeReceived(value: object): string {
  try {
    if (Array.isArray(value)) return `an array of ${value.length} values from the request`;
    const keys = Object.keys(value);
    const named = keys.slice(0, MAX_KEYS_NAMED).map((key) => JSON.stringify(key.length > 64 ? key.slice(0, 64) + '…' : key));
    return `an object from the request, keys ${named.join(', ')}${keys.length > MAX_KEYS_NAMED ? ', …' : ''}`;
  } catch {
    return UNREADABLE;
  }
}

/** Whether `text` is the value of one of the request's credential headers (Authorization, Cookie). */
export function isCredentialOf(text: string, request: IncomingMessage): boolean {
  // A short text (`Bearer`) is a word, not a credential.
  if (text.length < 8) return false;
  try {
    const raw = request.rawHeaders;
    for (let i = 0; i + 1 < raw.length; i += 2) if (isCredentialKey(raw[i]) && raw[i + 1].includes(text)) return true;
  } catch {
    // An unreadable request: nothing to compare with.
  }
  return false;
}

/** The request's path for the log: without the query string, whose values often carry tokens, nor an absolute-form target's credentials. */
export function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const shown = withoutUserinfo(url);
  const end = shown.search(/[?#]/);
  return end === -1 ? shown : shown.slice(0, end);
}

/**
 * Where the request target is absolute-form with credentials (`http://user:password@host/`), the
 * credentials: logged nowhere (`…@` in their place).
 */
function userinfoOf(url: string): string | undefined {
  const authority = authorityIn(url);
  if (authority === undefined) return undefined;
  const at = url.lastIndexOf('@', authority.end - 1);
  return at < authority.start ? undefined : url.slice(authority.start, at + 1);
}

function withoutUserinfo(url: string): string {
  const userinfo = userinfoOf(url);
  return userinfo === undefined ? url : url.replace(userinfo, '…@');
}

/** A URL for the log: query values often carry tokens (`?access_token=`), so only names are kept (and no credentials). */
export function withoutQueryValues(sent: string): string {
  const url = withoutUserinfo(sent);
  // A fragment (no client should send one; a broken one forwarding `location.href` does) holds tokens too: left out.
  const hash = url.indexOf('#');
  const fragment = hash === -1 ? '' : '#…';
  const target = hash === -1 ? url : url.slice(0, hash);
  const q = target.indexOf('?');
  if (q === -1) return target + fragment;
  const names = target
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      return eq === -1 ? pair : `${pair.slice(0, eq)}=…`;
    });
  return `${target.slice(0, q)}?${names.join('&')}${fragment}`;
}

/**
 * A message for the log: where it quotes the request's URL (faas-js-runtime's 404 does), without
 * the query's values, also when the message was cut short inside the URL.
 */
export function loggedMessage(quoting: string | undefined, sent: string | undefined): string | undefined {
  const userinfo = sent === undefined ? undefined : userinfoOf(sent);
  const message = userinfo === undefined ? quoting : quoting?.split(userinfo).join('…@');
  const url = sent === undefined ? undefined : withoutUserinfo(sent);
  // Where the URL's query or fragment begins: what follows is left out (withoutQueryValues()).
  const q = url === undefined ? -1 : url.search(/[?#]/);
  if (message === undefined || q === -1) return message;
  const at = message.indexOf(url!.slice(0, q + 1));
  if (at === -1) return message;
  let end = at + q + 1;
  while (end < message.length && end - at < url!.length && message.charCodeAt(end) === url!.charCodeAt(end - at)) end++;
  return message.slice(0, at) + withoutQueryValues(message.slice(at, end)) + message.slice(end);
}
