// Scanner checks: each scanner's documented health or read-only API, answered 200.
import { checkTcp, fetchBounded } from './http';
import { excerpt, TestFailure, type CheckContext } from './registry';
import { parseHostPort } from './endpoint';

/** The read-only path each HTTP scanner answers 200 on when it is up. */
export const SCANNER_PATHS = {
  clairify: '/scanner/ping',
  clair: '/v1/namespaces',
  clairV4: '/indexer/api/v1/index_state',
} as const;

export async function checkHttpScanner(kind: keyof typeof SCANNER_PATHS, endpoint: URL, insecure: boolean, ctx: CheckContext): Promise<void> {
  const url = new URL(endpoint.href);
  url.pathname = endpoint.pathname.replace(/\/$/, '') + SCANNER_PATHS[kind];
  const reply = await fetchBounded(url, { insecure, signal: ctx.signal }, ctx.limits);
  if (reply.status === 200) return;
  throw new TestFailure(`unexpected status: ${endpoint.host} answered HTTP ${reply.status} to GET ${url.pathname}${excerpt(reply, ctx.redactor)}`);
}

/**
 * Scanner V4's indexer and matcher speak gRPC: this checks that each accepts a TCP connection.
 * It says so in its message, since it does not call their APIs.
 */
export async function checkScannerV4(indexer: string, matcher: string, ctx: CheckContext): Promise<string> {
  const checked: string[] = [];
  for (const [role, value] of [['indexer', indexer], ['matcher', matcher]] as const) {
    const parsed = parseHostPort(value, 8443);
    if (typeof parsed === 'string') throw new TestFailure(`${role} endpoint ${parsed}`);
    try {
      await checkTcp(parsed.host, parsed.port, ctx.limits, ctx.signal);
    } catch (err) {
      throw new TestFailure(`scanner V4 ${role}: ${(err as Error).message}`);
    }
    checked.push(`${role} ${parsed.host}:${parsed.port}`);
  }
  return `${checked.join(' and ')} accept connections (their gRPC APIs were not called)`;
}
