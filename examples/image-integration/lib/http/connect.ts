// Connecting: each allowed address tried in order within one connect budget until one takes the
// connection (a failure names every address tried), the lookup that pins a request to the address,
// a connection's error described by the step that failed, and the TCP check of gRPC endpoints.
import { connect as netConnect, type LookupFunction, type Socket } from 'node:net';
import { quote } from '../excerpt';
import type { Redactor } from '../secrets';
import { NetworkFailure, seconds, type Address, type Limits } from './limits';
import { resolveAllowed } from './resolve';

/** Errors that mean this address did not take the connection: the next one may. */
export const NEXT_ADDRESS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EAFNOSUPPORT', 'ENETDOWN', 'EHOSTDOWN']);

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
export class NotConnected extends Error {
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
export async function eachAddress<T>(
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
export function pinned(address: string, family: number): LookupFunction {
  return ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    process.nextTick(() => {
      if (options?.all) callback(null, [{ address, family }]);
      else callback(null, address, family);
    });
  }) as unknown as LookupFunction;
}

const TLS_CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ALTNAME|TLS|SSL|EPROTO|ERR_SSL/;

/**
 * A connection's error as a failure that names the step. The text of an error that may carry a
 * peer's words (a certificate's names, for one) is quoted through `redactor` when there is one
 * (HTTP), else its first line (a TCP connect, whose errors are the system's).
 */
export function describe(err: NodeJS.ErrnoException, target: string, tls: boolean, signal?: AbortSignal, redactor?: Redactor): NetworkFailure {
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
