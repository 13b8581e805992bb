// A bounded HTTP client for talking to registries and scanners: names are resolved by a bounded
// resolver (c-ares, a timeout, the test's signal, at most 8 lookups at once), the address policy is
// checked on every address a name resolves to, each allowed address is tried in order and pinned,
// connect, response and body are timed, bodies are read up to a cap, redirects are followed only on
// the same origin, and every failure says which step failed.
// The parts are in http/: limits.ts (the limits, an address, the failure), resolve.ts (the bounded
// resolver and the policy on every address), connect.ts (each address in turn, the TCP check).
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { followsRedirect } from './endpoint';
import { quote } from './excerpt';
import type { Redactor } from './secrets';
import { describe, eachAddress, NEXT_ADDRESS, NotConnected, pinned } from './http/connect';
import { NetworkFailure, seconds, type Address, type Limits } from './http/limits';
import { resolveAllowed } from './http/resolve';

export { NetworkFailure, type Address, type Limits } from './http/limits';
export { MAX_LOOKUPS, resolveAllowed } from './http/resolve';
export { checkTcp, firstListening } from './http/connect';

/** The setting that allows loopback and unspecified addresses (index.ts reads it into `allowPrivate`). */
export { ALLOW_PRIVATE_SETTING } from './endpoint';

/**
 * Whether a value can be sent as a credential in a header as it is (a Bearer token, an AWS access
 * key id or session token): printable ASCII without spaces. Node refuses a header holding a control
 * character or a line break, and anything past ASCII is no token a server expects.
 */
export function headerSafe(value: string): boolean {
  return /^[\x21-\x7e]+$/.test(value);
}

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  url: URL;
  /** Each WWW-Authenticate header as sent: node joins them into one in `headers`, where a challenge's parameters run into the next's. */
  challenges: string[];
  /** The body was cut at the cap (`maxBodyBytes`): its end may be the start of something longer. */
  truncated?: boolean;
}

// The TLS context that trusts the system's CAs and `ca`, made once per list: made per request, it
// parsed some 150 certificates each time (milliseconds a request, on the event loop).
const contexts = new WeakMap<string[], SecureContext>();

function trusting(ca: string[]): SecureContext {
  let context = contexts.get(ca);
  if (context === undefined) contexts.set(ca, (context = createSecureContext({ ca: [...rootCertificates, ...ca] })));
  return context;
}

export interface RequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  insecure?: boolean;
  signal?: AbortSignal;
  /** The test's redactor: what a peer sent that a failure names (a redirect's origin, a certificate's names) is quoted through it (excerpt.ts). */
  redactor: Redactor;
}

/** One request; same-origin redirects (up to 3) are followed, and http to https on the same host without credentials; others are a failure. */
export async function fetchBounded(url: URL, init: RequestInit, limits: Limits): Promise<Reply> {
  let current = url;
  for (let hops = 0; ; hops++) {
    const reply = await request(current, init, limits);
    const location = reply.headers.location;
    if (reply.status < 300 || reply.status > 399 || location === undefined || reply.status === 304) return reply;
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      return reply;
    }
    // Same origin, or http to https on the same host without credentials (endpoint.ts followsRedirect).
    if (!followsRedirect(current, next, init.headers)) {
      throw new NetworkFailure(
        'redirect',
        `${current.host} redirected to another origin (${quote([next.origin], init.redactor)}); not followed, so credentials stay with the endpoint`,
      );
    }
    if (hops === 3) throw new NetworkFailure('redirect', `${current.host} redirected more than 3 times`);
    current = next;
  }
}

async function request(url: URL, init: RequestInit, limits: Limits): Promise<Reply> {
  const addresses = await resolveAllowed(url.hostname, limits, init.signal);
  return eachAddress(addresses, limits, init.signal, (a, connectMs) => attempt(url, init, limits, a, connectMs));
}

function attempt(url: URL, init: RequestInit, limits: Limits, { address, family }: Address, connectMs: number): Promise<Reply> {
  const tls = url.protocol === 'https:';
  const target = `${url.hostname}:${url.port || (tls ? 443 : 80)}`;
  return new Promise<Reply>((resolve, reject) => {
    let settled = false;
    let connected = false;
    let timer: NodeJS.Timeout | undefined;
    let req: ClientRequest | undefined;
    const fail = (err: NetworkFailure, retry = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req?.destroy();
      reject(retry ? new NotConnected(err) : err);
    };
    // Whatever fails, wherever: a connection error is this request's failure, never the process's.
    const failed = (err: NodeJS.ErrnoException) => {
      const retry = !connected && !init.signal?.aborted && NEXT_ADDRESS.has(err.code ?? '');
      fail(describe(err, target, tls, init.signal, init.redactor), retry);
    };
    // Thrown while the request is made: a system call that failed is a failure as above; anything
    // else is a bug, rejected as it is (answered 500 and logged).
    const thrown = (err: unknown) => {
      if ((err as NodeJS.ErrnoException)?.syscall !== undefined) return failed(err as NodeJS.ErrnoException);
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req?.destroy();
      reject(err);
    };
    // `beforeConnect`: a timeout while no TCP connection is made lets the next address be tried.
    const arm = (ms: number, message: string, beforeConnect = false) => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(new NetworkFailure('timeout', message), beforeConnect && !connected), ms);
    };
    const options: RequestOptions & { rejectUnauthorized?: boolean; servername?: string } = {
      method: init.method ?? 'GET',
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || undefined,
      path: url.pathname + url.search,
      headers: { 'user-agent': 'funcrun-image-integration/1', accept: 'application/json', ...init.headers },
      agent: false,
      lookup: pinned(address, family),
      signal: init.signal,
    };
    if (tls) {
      options.rejectUnauthorized = init.insecure !== true;
      if (limits.ca !== undefined) (options as { secureContext?: SecureContext }).secureContext = trusting(limits.ca);
      if (!isIP(options.host as string)) options.servername = options.host as string;
    }
    try {
      req = (tls ? httpsRequest : httpRequest)(options);
    } catch (err) {
      return thrown(err);
    }
    // Listened to before anything else runs; every later error reaches `failed` once.
    req.on('error', failed);
    arm(connectMs, `connect: no connection to ${target} within ${seconds(connectMs)}`, true);
    req.once('socket', (socket) => {
      // The request hears its socket's errors; this listener is there in case one comes when it no longer does.
      socket.on('error', () => undefined);
      // With TLS the handshake is part of connecting (within the same share), but once the TCP
      // connection is made a peer answered there: no other address is tried.
      socket.once('connect', () => (connected = true));
      socket.once(tls ? 'secureConnect' : 'connect', () => arm(limits.responseTimeout, `no answer from ${target} within ${seconds(limits.responseTimeout)}`));
    });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      // The headers came: the body has its own time, and a stall is told apart from no answer.
      arm(limits.responseTimeout, `${target} sent headers and then stopped sending its body (timeout after ${seconds(limits.responseTimeout)})`);
      res.on('data', (chunk: Buffer) => {
        if (size >= limits.maxBodyBytes) return;
        chunks.push(chunk.subarray(0, limits.maxBodyBytes - size));
        size += chunk.length;
        // Enough to judge the answer: stop an endless or huge body here.
        if (size >= limits.maxBodyBytes) done();
      });
      const done = () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req?.destroy();
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
          url,
          challenges: headerLines(res.rawHeaders, 'www-authenticate'),
          truncated: size >= limits.maxBodyBytes,
        });
      };
      res.once('end', done);
      res.on('error', () => done());
      res.once('aborted', () => done());
    });
    try {
      req.end(init.body);
    } catch (err) {
      thrown(err);
    }
  });
}

/** The values of every header named `name` (lowercase), in node's raw list (name, value, ...). */
function headerLines(raw: string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === name.length && raw[i].toLowerCase() === name) values.push(raw[i + 1]);
  return values;
}
