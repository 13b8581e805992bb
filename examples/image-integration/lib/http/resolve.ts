// Resolving a name as the client does: a bounded resolver (c-ares, not libuv's thread pool: A and
// AAAA together, one try, a deadline, the test's signal, at most MAX_LOOKUPS in flight), the hosts
// file first and resolv.conf's search list, as getaddrinfo reads them; then the address policy
// checked on every address the name resolved to (resolveAllowed).
import { readFileSync } from 'node:fs';
import { Resolver } from 'node:dns/promises';
import { open } from 'node:fs/promises';
import { isIP } from 'node:net';
import { refusal, refusedName } from '../endpoint';
import { NetworkFailure, seconds, type Address, type Limits } from './limits';

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
