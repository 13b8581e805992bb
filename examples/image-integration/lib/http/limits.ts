// What every part of the HTTP client shares: its limits (set once from the environment by
// index.ts), an address a name resolved to, and the failure each step reports.

export interface Limits {
  connectTimeout: number;
  responseTimeout: number;
  maxBodyBytes: number;
  allowPrivate: boolean;
  /** Certificates (PEM) trusted besides the system's, for registries with a private CA. */
  ca?: string[];
  /**
   * Resolves a host name to its addresses (for specs); default: the bounded resolver (resolve.ts). Either
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

/** A duration as a message says it: `5s`, or `1500ms`. */
export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}

