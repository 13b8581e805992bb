// The Docker Registry HTTP API v2 check: GET <endpoint>/v2/ with Basic credentials, and the
// Bearer token flow when the registry asks for it (WWW-Authenticate: Bearer realm=...).
import { excerpt } from './excerpt';
import { fetchBounded, headerSafe, type Limits } from './http';
import type { Redactor } from './secrets';

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

/** The longest DNS name (RFC 1035: 255 octets on the wire, 253 characters written). */
const MAX_HOST_NAME = 253;

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

/**
 * The registry's challenge, one per WWW-Authenticate header: its Bearer one where it sends others
 * too (Basic beside it), as StackRox's registry client takes it (parseOauthHeader); else the first.
 */
function bearerFirst(headers: string[]): Challenge | undefined {
  const challenges = headers.map(parseChallenge);
  return challenges.find((challenge) => challenge?.scheme === 'bearer') ?? challenges[0];
}

function basic(username: string, password: string, redactor: Redactor): string {
  // The redactor knows `user:password` as it is and in base64 (std and url, alone or in a longer
  // text), and the credentials as the header carries them whatever is left of its budget.
  const credentials = Buffer.from(`${username}:${password}`).toString('base64');
  redactor.add(password).add(`${username}:${password}`).addAsIs(credentials);
  return `Basic ${credentials}`;
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
  // The redactor learns secrets as a test goes (these credentials, a token): their matchers are built in a turn of their own.
  await ctx.redactor.ready();

  let reply = await fetchBounded(url, { headers, insecure, signal: ctx.signal, redactor: ctx.redactor }, ctx.limits);
  if (reply.status === 401) {
    const challenge = bearerFirst(reply.challenges);
    if (challenge?.scheme === 'bearer' && challenge.params.realm) {
      const token = await fetchToken(challenge.params, target, ctx);
      // Where the challenge came from: after an http to https redirect, the token goes over TLS.
      reply = await fetchBounded(
        reply.url,
        { headers: { authorization: `Bearer ${token}` }, insecure, signal: ctx.signal, redactor: ctx.redactor },
        ctx.limits,
      );
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
  // A name longer than DNS allows resolves nowhere, and is not quoted in a message at that length.
  if (realm.hostname.length > MAX_HOST_NAME) {
    throw new TestFailure(
      `authentication: ${target.endpoint.host} named a token service whose host name is ${realm.hostname.length} characters long, longer than a DNS name may be (${MAX_HOST_NAME})`,
    );
  }
  // Where credentials may go (StackRox's client, stackrox/docker-registry-client TokenTransport, sends
  // them to any realm): over https; over plain http to the registry's own origin, which already gets
  // them that way; never over plain http to another origin. An anonymous token may come over plain
  // http from elsewhere with insecure: true.
  const credentials = target.username !== undefined && target.password !== undefined;
  const ownOrigin = realm.origin === target.endpoint.origin;
  if (realm.protocol !== 'https:' && !(realm.protocol === 'http:' && (ownOrigin || (target.insecure && !credentials)))) {
    throw new TestFailure(
      `authentication: ${target.endpoint.host} named a token service ${realm.host === '' ? `over ${realm.protocol}, a URL without a host` : `over ${realm.protocol}// at ${realm.host}, not its own origin`}; credentials go only over https, or over http to the registry's own origin`,
    );
  }
  if (params.service) realm.searchParams.set('service', params.service);
  if (params.scope) realm.searchParams.set('scope', params.scope);
  const headers: Record<string, string> = {};
  if (target.username !== undefined && target.password !== undefined) headers.authorization = basic(target.username, target.password, ctx.redactor);
  await ctx.redactor.ready();
  const reply = await fetchBounded(realm, { headers, insecure: target.insecure, signal: ctx.signal, redactor: ctx.redactor }, ctx.limits);
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
  if (!headerSafe(token)) {
    // Known before the failure is put in words, its matchers built in a turn of their own.
    await ctx.redactor.add(token).ready();
    throw new TestFailure(
      `authentication: the token service at ${realm.host} answered with a token that cannot be sent in a header (it holds a space, a control character or a character outside ASCII)`,
    );
  }
  await ctx.redactor.add(token).ready();
  return token;
}
