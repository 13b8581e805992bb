// The Docker Registry HTTP API v2 check: GET <endpoint>/v2/ with Basic credentials, and the
// Bearer token flow when the registry asks for it (WWW-Authenticate: Bearer realm=...).
import { isUtf8 } from 'node:buffer';
import { fetchBounded, type Limits, type Reply } from './http';
import { MASK, type Redactor } from './secrets';

export interface RegistryTarget {
  endpoint: URL;
  insecure: boolean;
  username?: string;
  password?: string;
  /** `/v2/`, or `/v2/_catalog` for registries that let anyone ping `/v2/`. */
  path: string;
}

export interface CheckContext {
  limits: Limits;
  signal: AbortSignal;
  redactor: Redactor;
}

/** A check that ran and failed: the message says which step and why. */
export class TestFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TestFailure';
  }
}

const EXCERPT_LENGTH = 160;

/**
 * The error codes and messages of a JSON answer: Docker Distribution's
 * `{"errors": [{"code", "message"}]}`, or an OAuth or token server's `error`, `message`, `details`.
 * Parsing decodes the JSON escapes (Go writes `&` as `\u0026`), so the redactor sees the text as it is.
 */
function structuredErrors(text: string): string[] | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return undefined;
  const str = (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? value : undefined);
  const pair = (o: Record<string, unknown>) => {
    const code = str(o.code) ?? str(o.error);
    const message = str(o.message) ?? str(o.error_description) ?? str(o.details) ?? str(o.detail);
    return code !== undefined && message !== undefined ? `${code}: ${message}` : (code ?? message);
  };
  const body = json as Record<string, unknown>;
  const errors = Array.isArray(body.errors)
    ? body.errors.slice(0, 5).flatMap((e) => (e !== null && typeof e === 'object' ? [pair(e as Record<string, unknown>)] : [str(e)]))
    : [pair(body)];
  const found = errors.filter((e): e is string => e !== undefined);
  return found.length > 0 ? found : undefined;
}

/**
 * A peer's answer as text: UTF-8 when it is (a sequence cut at the cap aside), else each byte one
 * character (Latin-1), so that no byte is lost to U+FFFD before the redactor reads it: a secret
 * echoed in UTF-16 (`é` is the bytes E9 00) is then found and masked whole.
 */
export function bodyText(reply: Reply): string {
  const { body } = reply;
  if (isUtf8(body)) return body.toString('utf8');
  if (reply.truncated) {
    // The cap may cut the last character: its first bytes are left out, not read as Latin-1.
    for (let keep = body.length - 1; keep >= Math.max(0, body.length - 3); keep--) {
      if (isUtf8(body.subarray(0, keep))) return body.subarray(0, keep).toString('utf8');
    }
  }
  return body.toString('latin1');
}

/**
 * A short, single-line excerpt of a peer's answer: the registry's error codes and messages when it
 * gives them structured, else its text. Masked first, then put on one line and cut, so neither a
 * cut through a secret nor a run of spaces in one keeps part of it from being masked. Without a
 * redactor (masked later with the rest of the message) it is not collapsed: white space becomes
 * spaces one for one, which the redactor matches as they were.
 */
export function excerpt(reply: Reply, redactor?: Redactor): string {
  const raw = bodyText(reply);
  const structured = reply.truncated ? undefined : structuredErrors(raw);
  let text: string;
  if (redactor === undefined) {
    text = (structured?.join('; ') ?? raw).replace(/\s/g, ' ').trim();
  } else {
    const masked = structured === undefined ? redactor.redact(raw, { cut: reply.truncated === true }) : structured.map((e) => redactor.redact(e)).join('; ');
    text = masked.replace(/\s+/g, ' ').trim();
  }
  if (text === '') return '';
  if (text.length <= EXCERPT_LENGTH) return `: ${text}`;
  // A cut through a mask keeps the whole mask, so that `******` never reads as a shorter run of stars.
  let end = EXCERPT_LENGTH;
  if (redactor !== undefined) while (end < text.length && end < EXCERPT_LENGTH + MASK.length && text[end - 1] === '*' && text[end] === '*') end++;
  return `: ${text.slice(0, end)}...`;
}

interface Challenge {
  scheme: string;
  params: Record<string, string>;
}

/** `Bearer realm="https://auth",service="registry",scope="..."` to its scheme and parameters. */
export function parseChallenge(header: string | undefined): Challenge | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*(\w+)\s*(.*)$/s.exec(header);
  if (m === null) return undefined;
  const params: Record<string, string> = {};
  // `\b`: a name is tried from its first character only. Without it a long word with no '=' after
  // it is tried again from each of its characters, in time the square of its length.
  for (const p of m[2].matchAll(/\b(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,]+))/g)) params[p[1].toLowerCase()] = (p[2] ?? p[3]).replace(/\\(.)/g, '$1');
  return { scheme: m[1].toLowerCase(), params };
}

function basic(username: string, password: string, redactor: Redactor): string {
  // The redactor knows `user:password` as it is and in base64 (std and url, alone or in a longer text).
  redactor.add(password).add(`${username}:${password}`);
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

/** Resolves when the registry accepts the credentials; throws TestFailure or NetworkFailure. */
export async function checkRegistry(target: RegistryTarget, ctx: CheckContext): Promise<void> {
  const { endpoint, insecure } = target;
  const url = new URL(endpoint.href);
  url.pathname = endpoint.pathname.replace(/\/$/, '') + target.path;
  const host = endpoint.host;
  const hasCredentials = target.username !== undefined && target.password !== undefined;
  // Basic credentials go to the endpoint the user named, over the scheme they typed, as StackRox sends them.
  const headers: Record<string, string> = {};
  if (hasCredentials) headers.authorization = basic(target.username!, target.password!, ctx.redactor);

  let reply = await fetchBounded(url, { headers, insecure, signal: ctx.signal }, ctx.limits);
  if (reply.status === 401) {
    const challenge = parseChallenge(reply.headers['www-authenticate']);
    if (challenge?.scheme === 'bearer' && challenge.params.realm) {
      const token = await fetchToken(challenge.params, target, ctx);
      // Where the challenge came from: after an http to https redirect, the token goes over TLS.
      reply = await fetchBounded(reply.url, { headers: { authorization: `Bearer ${token}` }, insecure, signal: ctx.signal }, ctx.limits);
    }
  }
  if (reply.status >= 200 && reply.status < 300) return;
  if (reply.status === 401 || reply.status === 403) {
    throw new TestFailure(
      hasCredentials
        ? `authentication: ${host} rejected the credentials (HTTP ${reply.status})${excerpt(reply, ctx.redactor)}`
        : `authentication: ${host} requires credentials (HTTP ${reply.status})${excerpt(reply, ctx.redactor)}`,
    );
  }
  throw new TestFailure(`unexpected status: ${host} answered HTTP ${reply.status} to GET ${url.pathname}${excerpt(reply, ctx.redactor)}`);
}

async function fetchToken(params: Record<string, string>, target: RegistryTarget, ctx: CheckContext): Promise<string> {
  let realm: URL;
  try {
    realm = new URL(params.realm);
  } catch {
    throw new TestFailure(`authentication: ${target.endpoint.host} named a token service that is not a URL`);
  }
  // Where credentials may go (StackRox's client, stackrox/docker-registry-client TokenTransport, sends
  // them to any realm): over https; over plain http to the registry's own origin, which already gets
  // them that way; never over plain http to another origin. An anonymous token may come over plain
  // http from elsewhere with insecure: true.
  const credentials = target.username !== undefined && target.password !== undefined;
  const ownOrigin = realm.origin === target.endpoint.origin;
  if (realm.protocol !== 'https:' && !(realm.protocol === 'http:' && (ownOrigin || (target.insecure && !credentials)))) {
    throw new TestFailure(
      `authentication: ${target.endpoint.host} named a token service over ${realm.protocol}// at ${realm.host}, not its own origin; credentials go only over https, or over http to the registry's own origin`,
    );
  }
  if (params.service) realm.searchParams.set('service', params.service);
  if (params.scope) realm.searchParams.set('scope', params.scope);
  const headers: Record<string, string> = {};
  if (target.username !== undefined && target.password !== undefined) headers.authorization = basic(target.username, target.password, ctx.redactor);
  const reply = await fetchBounded(realm, { headers, insecure: target.insecure, signal: ctx.signal }, ctx.limits);
  if (reply.status === 401 || reply.status === 403) {
    throw new TestFailure(`authentication: the token service at ${realm.host} rejected the credentials (HTTP ${reply.status})${excerpt(reply, ctx.redactor)}`);
  }
  if (reply.status < 200 || reply.status > 299) {
    throw new TestFailure(`authentication: the token service at ${realm.host} answered HTTP ${reply.status}${excerpt(reply, ctx.redactor)}`);
  }
  let token: unknown;
  try {
    const json = JSON.parse(reply.body.toString('utf8')) as { token?: unknown; access_token?: unknown };
    token = json.token ?? json.access_token;
  } catch {
    token = undefined;
  }
  if (typeof token !== 'string' || token === '') throw new TestFailure(`authentication: the token service at ${realm.host} answered without a token`);
  ctx.redactor.add(token);
  return token;
}
