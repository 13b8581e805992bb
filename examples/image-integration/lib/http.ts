// A bounded HTTP client for talking to registries and scanners: names are resolved by a bounded
// resolver (c-ares, a timeout, the test's signal, at most 8 lookups at once), the address policy is
// checked on every address a name resolves to, each allowed address is tried in order and pinned,
// connect, response and body are timed, bodies are read up to a cap, redirects are followed only on
// the same origin, and every failure says which step failed.
import { readFileSync } from 'node:fs';
import { Resolver } from 'node:dns/promises';
import { open } from 'node:fs/promises';
import { request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, isIP, type LookupFunction, type Socket } from 'node:net';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { followsRedirect, refusal, refusedName } from './endpoint';
import { quote } from './excerpt';
import type { Redactor } from './secrets';

export interface Limits {
  connectTimeout: number;
  responseTimeout: number;
  maxBodyBytes: number;
  allowPrivate: boolean;
  /** Certificates (PEM) trusted besides the system's, for registries with a private CA. */
  ca?: string[];
  /**
   * Resolves a host name to its addresses (for specs); default: the bounded resolver below. Either
   * way the lookup is bounded by `resolveTimeout` and the test's signal, and waits its turn among
   * at most 8 lookups in flight. Not called for IP literals or `localhost`.
   */
  resolve?: (hostname: string) => Promise<{ address: string; family: number }[]>;
  /** How long one name may take to resolve, waiting for a turn included; default `connectTimeout`. */
  resolveTimeout?: number;
  /** DNS servers (`ip` or `ip:port`) for the bounded resolver; default the system's (`/etc/resolv.conf`). */
  dnsServers?: string[];
  /** The hosts file the bounded resolver reads before asking DNS (as `dns.lookup` does); default `/etc/hosts`, `null` for none. */
  hostsFile?: string | null;
  /** The search list and ndots (resolv.conf's); default the system's, or none with `dnsServers` set. */
  search?: { search: string[]; ndots: number };
}

export type Address = { address: string; family: number };

/** The setting that allows loopback and unspecified addresses (index.ts reads it into `allowPrivate`). */
export { ALLOW_PRIVATE_SETTING } from './endpoint';

/** At most this many name lookups are in flight in the process; the others wait their turn. */
export const MAX_LOOKUPS = 8;

/** A counting semaphore whose waiters can give up (their test's signal, their own deadline). */
class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly size: number) {}
  /** Resolves with a release function; rejects with `abort`'s reason when `abort` fires first. */
  acquire(abort: AbortSignal): Promise<() => void> {
    const release = () => {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    };
    if (abort.aborted) return Promise.reject(abort.reason);
    if (this.active < this.size) {
      this.active++;
      return Promise.resolve(onlyOnce(release));
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        abort.removeEventListener('abort', giveUp);
        resolve(onlyOnce(release));
      };
      const giveUp = () => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(abort.reason);
      };
      this.waiting.push(grant);
      abort.addEventListener('abort', giveUp, { once: true });
    });
  }
}

function onlyOnce(f: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      f();
    }
  };
}

const lookups = new Semaphore(MAX_LOOKUPS);

/**
 * The bounded resolver: c-ares (`dns.Resolver`, no libuv thread pool), A and AAAA asked together,
 * one try each, each answer taken on its own: by `deadline` whatever has arrived is used, as
 * getaddrinfo and Go's resolver use it, so a DNS server that drops AAAA questions (some resolvers
 * and firewalls do) leaves the A answer; the name fails only when neither family has addresses. A
 * name one family says does not exist (NXDOMAIN) has none of the other either: that ends it at
 * once. Cancelled when `stop` fires. IPv4 addresses first, then IPv6. It reads DNS only: the
 * hosts file is read before it is called, and `localhost` never reaches it.
 */
function boundedResolve(host: string, deadline: number, servers: string[] | undefined, stop: AbortSignal | undefined): Promise<Address[]> {
  const remaining = Math.max(1, deadline - Date.now());
  const resolver = new Resolver({ timeout: remaining, tries: 1 });
  if (servers !== undefined) resolver.setServers(servers);
  return new Promise<Address[]>((resolve, reject) => {
    const found: [Address[] | undefined, Address[] | undefined] = [undefined, undefined];
    const failed: [NodeJS.ErrnoException | undefined, NodeJS.ErrnoException | undefined] = [undefined, undefined];
    let settled = false;
    const end = () => {
      settled = true;
      clearTimeout(timer);
      stop?.removeEventListener('abort', cancel);
      resolver.cancel();
    };
    const finish = (atDeadline: boolean) => {
      if (settled) return;
      const answered = (family: 0 | 1) => found[family] !== undefined || failed[family] !== undefined;
      const missing = failed.find((e) => e?.code === 'ENOTFOUND');
      if (!atDeadline && !(answered(0) && answered(1)) && missing === undefined) return;
      end();
      const addresses = [...(found[0] ?? []), ...(found[1] ?? [])];
      if (addresses.length > 0) return resolve(addresses);
      if (missing !== undefined) return reject(missing);
      if (!(answered(0) && answered(1))) return reject(Object.assign(new Error(`queryA ETIMEOUT ${host}`), { code: 'ETIMEOUT' }));
      const errors = failed.filter((e): e is NodeJS.ErrnoException => e !== undefined);
      // A name that exists without addresses of one family answers ENODATA there: report the other's error.
      reject(errors.find((e) => e.code !== 'ENODATA') ?? errors[0]);
    };
    const timer = setTimeout(() => finish(true), remaining);
    const cancel = () => {
      if (settled) return;
      end();
      reject(stop!.reason);
    };
    if (stop?.aborted) return cancel();
    stop?.addEventListener('abort', cancel, { once: true });
    const asked = (family: 0 | 1, query: Promise<string[]>) =>
      query.then(
        (list) => {
          found[family] = list.map((address) => ({ address, family: family === 0 ? 4 : 6 }));
          finish(false);
        },
        (err: NodeJS.ErrnoException) => {
          failed[family] = err;
          finish(false);
        },
      );
    void asked(0, resolver.resolve4(host));
    void asked(1, resolver.resolve6(host));
  });
}

/**
 * The search list, as getaddrinfo applies it (resolv.conf(5)): a name with fewer dots than `ndots`
 * is tried with each search domain first, then as it is; another name as it is first. So a short
 * in-cluster name (`my-registry`, Kubernetes: `search <ns>.svc.cluster.local ...`, `ndots:5`)
 * resolves as before. A name ending in `.` is only itself. The first name that has addresses wins.
 */
async function searching(host: string, limits: Limits, resolve: (name: string) => Promise<Address[]>): Promise<Address[]> {
  const { search, ndots } = limits.search ?? (limits.dnsServers === undefined ? systemSearch() : { search: [], ndots: 1 });
  let names: string[];
  if (host.endsWith('.')) names = [host.slice(0, -1)];
  else {
    const dots = host.split('.').length - 1;
    const withDomains = search.slice(0, 6).map((domain) => `${host}.${domain}`);
    names = dots >= ndots ? [host, ...withDomains] : [...withDomains, host];
  }
  let first: unknown;
  for (const name of names) {
    try {
      return await resolve(name);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Only "no such name" moves on; a timeout or a cancel ends the lookup.
      if (code !== 'ENOTFOUND' && code !== 'ENODATA') throw err;
      first ??= err;
    }
  }
  throw first;
}

let system: { search: string[]; ndots: number } | undefined;
/** `search` and `options ndots:` from /etc/resolv.conf, read once (its first 64 KiB). */
function systemSearch(): { search: string[]; ndots: number } {
  if (system !== undefined) return system;
  let search: string[] = [];
  let ndots = 1;
  try {
    const text = readFileSync('/etc/resolv.conf', 'utf8').slice(0, 64 * 1024);
    for (const line of text.split('\n')) {
      const words = line.trim().split(/\s+/);
      if (words[0] === 'search' || words[0] === 'domain') search = words.slice(1).filter((d) => d !== '' && !d.startsWith('#'));
      if (words[0] === 'options') {
        const option = words.find((w) => w.startsWith('ndots:'));
        if (option !== undefined) ndots = Math.min(15, Number(option.slice(6)) || 1);
      }
    }
  } catch {
    // No resolv.conf: names are looked up as they are.
  }
  return (system = { search, ndots });
}

/** At most this much of the hosts file is read. */
const MAX_HOSTS_BYTES = 1024 * 1024;

/**
 * `host`'s addresses in the hosts file (`ip name alias...`, `#` comments), in file order, or
 * undefined when it is not there or the file cannot be read. Kubernetes `hostAliases` and Docker's
 * `--add-host` land there, so the bounded resolver reads it as `dns.lookup` (getaddrinfo) did.
 */
async function fromHostsFile(host: string, file: string): Promise<Address[] | undefined> {
  let text: string;
  try {
    const handle = await open(file, 'r');
    try {
      const buffer = Buffer.alloc(MAX_HOSTS_BYTES);
      const { bytesRead } = await handle.read(buffer, 0, MAX_HOSTS_BYTES, 0);
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
  const wanted = host.toLowerCase().replace(/\.$/, '');
  const found: Address[] = [];
  for (const line of text.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    const family = isIP(address ?? '');
    if (family === 0 || !names.some((n) => n.toLowerCase() === wanted)) continue;
    if (!found.some((a) => a.address === address)) found.push({ address, family });
  }
  return found.length > 0 ? found : undefined;
}

const LOCALHOST: Address[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

class ResolveTimeout extends Error {}

/**
 * `host`'s addresses, within `resolveTimeout` (the wait for a turn included) and the test's signal.
 * IP literals and `localhost` need no lookup.
 */
async function lookup(host: string, limits: Limits, signal: AbortSignal | undefined): Promise<Address[]> {
  if (isIP(host)) return [{ address: host, family: isIP(host) }];
  if (/^localhost\.?$/i.test(host)) return LOCALHOST;
  const timeout = limits.resolveTimeout ?? limits.connectTimeout;
  const deadline = Date.now() + timeout;
  const bound = new AbortController();
  const timer = setTimeout(() => bound.abort(new ResolveTimeout()), timeout);
  const stop = () => bound.abort(signal!.reason);
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  let release: (() => void) | undefined;
  let queuing = false;
  try {
    const queued = lookups.acquire(bound.signal);
    queuing = true;
    release = await queued;
    queuing = false;
    const hostsFile = limits.hostsFile === undefined ? '/etc/hosts' : limits.hostsFile;
    if (limits.resolve === undefined) {
      // Bounded by the deadline itself, which then uses what has arrived (boundedResolve).
      const listed = hostsFile === null ? undefined : await fromHostsFile(host, hostsFile);
      return listed ?? (await searching(host, limits, (name) => boundedResolve(name, deadline, limits.dnsServers, signal)));
    }
    const started = limits.resolve(host);
    // An injected resolver may not listen to the signal: the race bounds it all the same.
    return await new Promise<Address[]>((resolve, reject) => {
      const abandon = () => reject(bound.signal.reason);
      if (bound.signal.aborted) return abandon();
      bound.signal.addEventListener('abort', abandon, { once: true });
      started.then(resolve, (err) => reject(bound.signal.aborted ? bound.signal.reason : err));
    });
  } catch (err) {
    if (signal?.aborted) throw new NetworkFailure('timeout', `the test was stopped while resolving host '${host}': it took too long`);
    // The deadline passed with neither family answered (boundedResolve's ETIMEOUT, or c-ares's a moment before it).
    if (err instanceof ResolveTimeout || (err as NodeJS.ErrnoException).code === 'ETIMEOUT') {
      const busy = queuing ? ` (it waited for one of the ${MAX_LOOKUPS} lookups in flight)` : '';
      throw new NetworkFailure('resolve', `connect: cannot resolve host '${host}': name resolution timed out after ${seconds(timeout)}${busy}`);
    }
    const code = (err as NodeJS.ErrnoException).code;
    throw new NetworkFailure('resolve', `connect: cannot resolve host '${host}'${code ? ` (${code})` : ''}`);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
    release?.();
  }
}

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
  /** The body was cut at the cap (`maxBodyBytes`): its end may be the start of something longer. */
  truncated?: boolean;
}

/** Why a request failed: the step and a message a person can act on (never containing a secret as sent). */
export class NetworkFailure extends Error {
  constructor(
    readonly step: 'policy' | 'resolve' | 'connect' | 'tls' | 'timeout' | 'read' | 'redirect' | 'local',
    message: string,
    /** The system's error code of a connection that failed (ECONNREFUSED...). */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'NetworkFailure';
  }
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/**
 * Resolves `hostname` once (bounded, see `lookup`) and returns every address to try, in order; the
 * whole name is refused by policy when any of its addresses must be.
 */
export async function resolveAllowed(hostname: string, limits: Limits, signal?: AbortSignal): Promise<Address[]> {
  const host = hostname.replace(/^\[|\]$/g, '');
  // Metadata services by name are refused whatever the operator allows.
  const byName = refusedName(host);
  if (byName) throw new NetworkFailure('policy', `endpoint refused: ${byName}`);
  const addresses = await lookup(host, limits, signal);
  if (addresses.length === 0) throw new NetworkFailure('resolve', `connect: cannot resolve host '${host}' (no addresses)`);
  for (const { address } of addresses) {
    const refused = refusal(host, address, limits.allowPrivate);
    if (refused !== undefined) throw new NetworkFailure('policy', refused);
  }
  return addresses;
}

/** Errors that mean this address did not take the connection: the next one may. */
const NEXT_ADDRESS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EAFNOSUPPORT', 'ENETDOWN', 'EHOSTDOWN']);

/** How telling a failure to connect is (lower: more), when several addresses failed: one that refused says something is there. */
function telling(failure: NetworkFailure): number {
  if (failure.code === 'ECONNREFUSED') return 0;
  if (failure.step === 'timeout') return 1;
  return failure.code === 'EADDRNOTAVAIL' || failure.code === 'EAFNOSUPPORT' ? 3 : 2;
}

/** One address's outcome, briefly, for a message that names each address tried. */
function outcome(failure: NetworkFailure): string {
  if (failure.code === 'ECONNREFUSED') return 'refused';
  if (failure.step === 'timeout') return 'no connection in time';
  if (failure.code === 'EADDRNOTAVAIL' || failure.code === 'EAFNOSUPPORT') return `unreachable from this host (${failure.code})`;
  return failure.code === undefined ? 'failed' : `unreachable (${failure.code})`;
}

/** A failure before any connection was made, so nothing was sent: the next address may be tried. */
class NotConnected extends Error {
  constructor(readonly failure: NetworkFailure) {
    super(failure.message);
  }
}

/**
 * Tries `attempt` on each address in order until one connects. The connect timeout is one budget
 * for all of them: each attempt gets what is left of it, shared with the addresses still to try.
 * A failure names the addresses tried when there were several: headed by the most telling failure
 * (a refusal, then a timeout, then an unreachable address), each address's outcome named when they differ.
 */
async function eachAddress<T>(
  addresses: Address[],
  limits: Limits,
  signal: AbortSignal | undefined,
  attempt: (a: Address, connectMs: number) => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + limits.connectTimeout;
  const tried: string[] = [];
  const failures: NetworkFailure[] = [];
  for (let i = 0; ; i++) {
    const remaining = Math.max(1, deadline - Date.now());
    const share = i === addresses.length - 1 ? remaining : Math.max(1, Math.floor(remaining / (addresses.length - i)));
    tried.push(addresses[i].address);
    try {
      return await attempt(addresses[i], share);
    } catch (err) {
      if (!(err instanceof NotConnected)) throw err;
      const last = i === addresses.length - 1 || signal?.aborted || Date.now() >= deadline;
      failures.push(err.failure);
      if (last) {
        if (tried.length < 2) throw err.failure;
        // The most telling failure heads the message (a refusal says more than an unreachable address).
        const best = failures.reduce((a, b) => (telling(b) < telling(a) ? b : a));
        const { step, message } = best;
        // The budget is the whole connect timeout: say so, not the share the last attempt had.
        const text = step === 'timeout' ? message.replace(/ within \S+$/, ` within ${seconds(limits.connectTimeout)}`) : message;
        const outcomes = failures.map(outcome);
        const each = outcomes.every((o) => o === outcomes[0]) ? tried.join(', ') : tried.map((a, k) => `${a}: ${outcomes[k]}`).join('; ');
        throw new NetworkFailure(step, `${text} (tried ${each})`, best.code);
      }
    }
  }
}

/**
 * A lookup that answers with the address already resolved and allowed. It calls back on the next
 * tick, as dns.lookup does: called back at once, net connects inside `https.request()` itself, and
 * a connect() the kernel refuses at once (ENETUNREACH for a multicast address, EADDRNOTAVAIL for an
 * IPv6 address on a host without IPv6) throws out of it, or is emitted on a socket nobody listens
 * to yet, which ends the process.
 */
function pinned(address: string, family: number): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    process.nextTick(() => {
      if (options?.all) callback(null, [{ address, family }]);
      else callback(null, address, family);
    });
  }) as unknown as LookupFunction;
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
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), url, truncated: size >= limits.maxBodyBytes });
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

const TLS_CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME|TLS|SSL|EPROTO|ERR_SSL/;

/**
 * A connection's error as a failure that names the step. The text of an error that may carry a
 * peer's words (a certificate's names, for one) is quoted through `redactor` when there is one
 * (HTTP), else its first line (a TCP connect, whose errors are the system's).
 */
function describe(err: NodeJS.ErrnoException, target: string, tls: boolean, signal?: AbortSignal, redactor?: Redactor): NetworkFailure {
  const said = () => (redactor === undefined ? String(err.message).split('\n')[0] : quote([String(err.message)], redactor));
  const code = err.code ?? '';
  if (signal?.aborted || code === 'ABORT_ERR') return new NetworkFailure('timeout', `the test of ${target} was stopped: it took too long`);
  // This service's own limit, not the registry's fault: said as such (the service answers 503).
  if (code === 'EMFILE' || code === 'ENFILE') return new NetworkFailure('local', `this service has no file descriptors left to reach ${target}; retry shortly`);
  if (code === 'ECONNREFUSED') return new NetworkFailure('connect', `connect: ${target} refused the connection (nothing listens there)`, code);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new NetworkFailure('resolve', `connect: cannot resolve host of ${target}`);
  if (code === 'ECONNRESET' || code === 'EPIPE')
    return new NetworkFailure('connect', `connect: ${target} closed the connection${tls ? ' (is it serving TLS?)' : ''}`);
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || code === 'ENETDOWN' || code === 'EHOSTDOWN') {
    return new NetworkFailure('connect', `connect: ${target} is unreachable (${code})`, code);
  }
  // An address of a family this host cannot connect from (IPv6 where it has none).
  if (code === 'EADDRNOTAVAIL' || code === 'EAFNOSUPPORT')
    return new NetworkFailure('connect', `connect: ${target} is unreachable from this host (${code})`, code);
  if (tls && /wrong version number|packet length too long|http request/i.test(err.message)) {
    return new NetworkFailure('tls', `TLS: ${target} did not answer in TLS; for a plain HTTP endpoint write http://`);
  }
  if (tls && TLS_CODES.test(code)) {
    const reason = code === 'EPROTO' || code.startsWith('ERR_SSL') ? `handshake failed (${code})` : `${said()} (${code})`;
    return new NetworkFailure(
      'tls',
      `TLS: the certificate of ${target} failed verification: ${reason}; set insecure: true to skip verification, or give it a certificate this service trusts`,
    );
  }
  return new NetworkFailure('connect', `connect: ${target}: ${said()}`);
}

/** A TCP connection to host:port within the connect timeout (for gRPC endpoints), then closed; each address in turn. */
export async function checkTcp(host: string, port: number, limits: Limits, signal?: AbortSignal): Promise<void> {
  await firstListening(host, port, limits, signal);
}

/**
 * The first of `host`'s allowed addresses that accepts a TCP connection on `port` (each tried in
 * turn within the connect timeout, as for HTTP); the connection is closed. The gRPC Ping dials the
 * address found, so a dual-stack scanner whose first address refuses is reached on the next.
 */
export async function firstListening(host: string, port: number, limits: Limits, signal?: AbortSignal): Promise<Address> {
  const addresses = await resolveAllowed(host, limits, signal);
  const target = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  return eachAddress(
    addresses,
    limits,
    signal,
    (candidate, connectMs) =>
      new Promise<Address>((resolve, reject) => {
        let socket: Socket | undefined;
        const timer = setTimeout(() => {
          socket?.destroy();
          reject(new NotConnected(new NetworkFailure('timeout', `connect: no connection to ${target} within ${seconds(connectMs)}`)));
        }, connectMs);
        const failed = (err: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          socket?.destroy();
          const failure = describe(err, target, false, signal);
          reject(!signal?.aborted && NEXT_ADDRESS.has(err.code ?? '') ? new NotConnected(failure) : failure);
        };
        try {
          socket = netConnect({ host: candidate.address, port, signal });
        } catch (err) {
          return failed(err as NodeJS.ErrnoException);
        }
        socket.on('error', failed);
        socket.once('connect', () => {
          clearTimeout(timer);
          socket?.destroy();
          resolve(candidate);
        });
      }),
  );
}
