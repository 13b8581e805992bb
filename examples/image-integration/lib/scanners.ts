// Scanner checks: each scanner's documented health or read-only API, answered 200.
import { rootCertificates } from 'node:tls';
import { checkTcp, fetchBounded, resolveAllowed } from './http';
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
export async function checkScannerV4(indexer: string | undefined, matcher: string | undefined, ctx: CheckContext): Promise<string> {
  const checked: string[] = [];
  for (const [role, value] of [
    ['indexer', indexer],
    ['matcher', matcher],
  ] as const) {
    // Where StackRox's scanner V4 client dials when the integration names none.
    const parsed = parseHostPort(value || `scanner-v4-${role}.stackrox.svc:8443`, 8443);
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

/** Where StackRox's node scanner client dials when the integration names no grpcEndpoint. */
const DEFAULT_SCANNER_GRPC = 'scanner.stackrox.svc:8443';
// The scanner's own service (stackrox/scanner api/v1/ping.proto): Ping(Empty) returns PongMessage.
const PING = '/scannerV1.PingService/Ping';

/**
 * Clairify as NODE_SCANNER, tested as StackRox tests it (clairify.go TestNodeScanner): a gRPC
 * Ping over TLS on `grpcEndpoint`. The channel dials the address this service resolved and
 * allowed (the endpoint policy), with the host's name for TLS and :authority, so that gRPC's own
 * resolver never picks another. A peer that is no scanner (no PingService) fails the test.
 */
export async function checkClairifyNodeScanner(grpcEndpoint: string | undefined, ctx: CheckContext): Promise<string> {
  const parsed = parseHostPort(grpcEndpoint || DEFAULT_SCANNER_GRPC, 8443);
  if (typeof parsed === 'string') throw new TestFailure(`grpcEndpoint ${parsed}`);
  const { host, port } = parsed;
  const [first] = await resolveAllowed(host, ctx.limits, ctx.signal);
  const { Client, credentials, Metadata, status } = await import('@grpc/grpc-js');
  const roots = ctx.limits.ca === undefined ? null : Buffer.from([...rootCertificates, ...ctx.limits.ca].join('\n'));
  const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const client = new Client(`${first.family === 6 ? `[${first.address}]` : first.address}:${port}`, credentials.createSsl(roots), {
    'grpc.ssl_target_name_override': host,
    'grpc.default_authority': authority,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const deadline = new Date(Date.now() + ctx.limits.connectTimeout + ctx.limits.responseTimeout);
      const call = client.makeUnaryRequest(
        PING,
        () => Buffer.alloc(0),
        (bytes: Buffer) => bytes,
        Buffer.alloc(0),
        new Metadata(),
        { deadline },
        (err) => {
          ctx.signal.removeEventListener('abort', cancel);
          if (err === null) return resolve();
          const why =
            err.code === status.UNIMPLEMENTED
              ? `${authority} is no scanner: it does not serve scannerV1.PingService/Ping`
              : err.code === status.DEADLINE_EXCEEDED
                ? `${authority} did not answer the gRPC Ping in time`
                : `gRPC Ping to ${authority} failed (${status[err.code] ?? err.code}): ${firstLine(err.details)}`;
          reject(new TestFailure(`node scanner: ${ctx.redactor.redact(why)}`));
        },
      );
      const cancel = () => call.cancel();
      ctx.signal.addEventListener('abort', cancel, { once: true });
    });
  } finally {
    client.close();
  }
  return `node scanner at ${authority} answered the gRPC Ping`;
}

// gRPC's details may carry OpenSSL's report over several lines, and a trailing empty note.
function firstLine(text: string): string {
  return text
    .split('\n')[0]
    .replace(/\s*Resolution note:\s*$/, '')
    .trim();
}
