// A bounded HTTP client for talking to registries and scanners: the address policy is checked on
// the address actually connected to (resolved once, then pinned), connect and response are timed,
// bodies are read up to a cap, redirects are followed only on the same origin, and every failure
// says which step failed.
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingHttpHeaders, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as netConnect, isIP, type LookupFunction } from 'node:net';
import { rootCertificates } from 'node:tls';
import { refusedAddress, refusedName } from './endpoint';

export interface Limits {
  connectTimeout: number;
  responseTimeout: number;
  maxBodyBytes: number;
  allowPrivate: boolean;
  /** Certificates (PEM) trusted besides the system's, for registries with a private CA. */
  ca?: string[];
  /** Resolves a host name to its addresses; default `dns.lookup` (all addresses). */
  resolve?: (hostname: string) => Promise<{ address: string; family: number }[]>;
}

const systemResolve = (hostname: string) => dnsLookup(hostname, { all: true, verbatim: true });

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
    readonly step: 'policy' | 'resolve' | 'connect' | 'tls' | 'timeout' | 'read' | 'redirect',
    message: string,
  ) {
    super(message);
    this.name = 'NetworkFailure';
  }
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

/** Resolves `hostname` once and returns the address to connect to, refused by policy when it must be. */
export async function resolveAllowed(hostname: string, limits: Limits): Promise<{ address: string; family: number }> {
  const host = hostname.replace(/^\[|\]$/g, '');
  // Metadata services by name are refused whatever the operator allows.
  const byName = refusedName(host);
  if (byName) throw new NetworkFailure('policy', `endpoint refused: ${byName}`);
  let addresses: { address: string; family: number }[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) }];
  else {
    try {
      addresses = await (limits.resolve ?? systemResolve)(host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new NetworkFailure('resolve', `connect: cannot resolve host '${host}'${code ? ` (${code})` : ''}`);
    }
  }
  for (const { address } of addresses) {
    const why = refusedAddress(address, limits.allowPrivate);
    if (why) throw new NetworkFailure('policy', `endpoint refused: ${host === address ? '' : `${host} resolves to `}${why}; loopback, link-local and metadata addresses are not contacted`);
  }
  return addresses[0];
}

function pinned(address: string, family: number): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

export interface RequestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  insecure?: boolean;
  signal?: AbortSignal;
}

/** One request; same-origin redirects (up to 3) are followed, others are a failure. */
export async function fetchBounded(url: URL, init: RequestInit, limits: Limits): Promise<Reply> {
  let current = url;
  for (let hops = 0; ; hops++) {
    const reply = await once(current, init, limits);
    const location = reply.headers.location;
    if (reply.status < 300 || reply.status > 399 || location === undefined || reply.status === 304) return reply;
    let next: URL;
    try {
      next = new URL(location, current);
    } catch {
      return reply;
    }
    if (next.origin !== current.origin) {
      throw new NetworkFailure('redirect', `${current.host} redirected to another host (${next.host}); not followed, so credentials stay with the endpoint`);
    }
    if (hops === 3) throw new NetworkFailure('redirect', `${current.host} redirected more than 3 times`);
    current = next;
  }
}

async function once(url: URL, init: RequestInit, limits: Limits): Promise<Reply> {
  const { address, family } = await resolveAllowed(url.hostname, limits);
  const tls = url.protocol === 'https:';
  const target = `${url.hostname}:${url.port || (tls ? 443 : 80)}`;
  return new Promise<Reply>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const fail = (err: NetworkFailure) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      reject(err);
    };
    const arm = (ms: number, message: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(new NetworkFailure('timeout', message)), ms);
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
      if (limits.ca !== undefined) (options as { ca?: string[] }).ca = [...rootCertificates, ...limits.ca];
      if (!isIP(options.host as string)) options.servername = options.host as string;
    }
    const req = (tls ? httpsRequest : httpRequest)(options);
    arm(limits.connectTimeout, `connect: no connection to ${target} within ${seconds(limits.connectTimeout)}`);
    req.once('socket', (socket) => {
      socket.once(tls ? 'secureConnect' : 'connect', () =>
        arm(limits.responseTimeout, `no answer from ${target} within ${seconds(limits.responseTimeout)}`),
      );
    });
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
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
        req.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), url, truncated: size >= limits.maxBodyBytes });
      };
      res.once('end', done);
      res.once('error', () => done());
      res.once('aborted', () => done());
    });
    req.once('error', (err: NodeJS.ErrnoException) => fail(describe(err, target, tls, init.signal)));
    req.end(init.body);
  });
}

const TLS_CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME|TLS|SSL|EPROTO|ERR_SSL/;

function describe(err: NodeJS.ErrnoException, target: string, tls: boolean, signal?: AbortSignal): NetworkFailure {
  const code = err.code ?? '';
  if (signal?.aborted || code === 'ABORT_ERR') return new NetworkFailure('timeout', `the test of ${target} was stopped: it took too long`);
  if (code === 'ECONNREFUSED') return new NetworkFailure('connect', `connect: ${target} refused the connection (nothing listens there)`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return new NetworkFailure('resolve', `connect: cannot resolve host of ${target}`);
  if (code === 'ECONNRESET' || code === 'EPIPE') return new NetworkFailure('connect', `connect: ${target} closed the connection${tls ? ' (is it serving TLS?)' : ''}`);
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return new NetworkFailure('connect', `connect: ${target} is unreachable`);
  if (tls && /wrong version number|packet length too long|http request/i.test(err.message)) {
    return new NetworkFailure('tls', `TLS: ${target} did not answer in TLS; for a plain HTTP endpoint use http:// with insecure: true`);
  }
  if (tls && TLS_CODES.test(code)) {
    const reason = code === 'EPROTO' || code.startsWith('ERR_SSL') ? `handshake failed (${code})` : `${err.message.split('\n')[0]} (${code})`;
    return new NetworkFailure('tls', `TLS: the certificate of ${target} failed verification: ${reason}; set insecure: true to skip verification, or give it a certificate this service trusts`);
  }
  return new NetworkFailure('connect', `connect: ${target}: ${err.message.split('\n')[0]}`);
}

/** A TCP connection to host:port within the connect timeout (for gRPC endpoints), then closed. */
export async function checkTcp(host: string, port: number, limits: Limits, signal?: AbortSignal): Promise<void> {
  const { address } = await resolveAllowed(host, limits);
  const target = `${host}:${port}`;
  await new Promise<void>((resolve, reject) => {
    const socket = netConnect({ host: address, port, signal });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new NetworkFailure('timeout', `connect: no connection to ${target} within ${seconds(limits.connectTimeout)}`));
    }, limits.connectTimeout);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    });
    socket.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(describe(err, target, false, signal));
    });
  });
}
