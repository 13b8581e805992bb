// Scanner checks: each scanner's documented health or read-only API, judged as StackRox's client judges it.
import { rootCertificates } from 'node:tls';
import { checkTcp, fetchBounded, firstListening, NetworkFailure, type Reply } from './http';
import { decodePong } from './pong';
import { parseRequestJson, type JsonNode } from './request-json';
import { bodyText, excerpt, quote } from './excerpt';
import { TestFailure, type CheckContext } from './registry';
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
  const reply = await fetchBounded(url, { insecure, signal: ctx.signal, redactor: ctx.redactor }, ctx.limits);
  // Clair v4's index state may be answered 304 Not Modified (StackRox's clairv4.go Test takes 200 or 304).
  if (reply.status === 200 || (kind === 'clairV4' && reply.status === 304)) {
    if (kind !== 'clairify') return;
    const wrong = clairifyPingBody(reply, ctx);
    if (wrong === undefined) return;
    throw new TestFailure(`unexpected answer: ${endpoint.host} answered GET ${url.pathname} with ${wrong}`);
  }
  throw new TestFailure(`unexpected status: ${endpoint.host} answered HTTP ${reply.status} to GET ${url.pathname}${excerpt(reply, ctx.redactor)}`);
}

/**
 * What is wrong with clairify's answer to its ping, or undefined: StackRox's client
 * (stackrox/scanner pkg/clairify/client, sendRequest) decodes the body as JSON into
 * `{"Error": {"Message": ...}}` with Go's encoding/json, and fails when that fails or `Error` is
 * set. So a body that is empty, not JSON, JSON but no object (`null` aside), or an object whose
 * `Error` (any case, the last one given) is not null fails, as there; a lone surrogate in a string
 * is U+FFFD there, not a failure.
 */
function clairifyPingBody(reply: Reply, ctx: CheckContext): string | undefined {
  if (reply.truncated) return `a body larger than ${ctx.limits.maxBodyBytes} bytes, where a JSON object was expected`;
  const text = bodyText(reply);
  if (text.trim() === '') return 'an empty body, where a JSON object was expected';
  let json: JsonNode;
  try {
    json = parseRequestJson(text, { replaceLoneSurrogates: true });
  } catch {
    return `a body that is not JSON${excerpt(reply, ctx.redactor)}`;
  }
  if (json.kind === 'null') return undefined;
  if (json.kind !== 'object') return `JSON that is not an object${excerpt(reply, ctx.redactor)}`;
  // encoding/json matches a key to the field `Error` in any case; the last such key wins.
  const error = lastEntry(json.entries, 'error');
  if (error === undefined || error.kind === 'null') return undefined;
  if (error.kind !== 'object') return `an Error field that is not an object${excerpt(reply, ctx.redactor)}`;
  const message = lastEntry(error.entries, 'message');
  const said = message?.kind === 'string' ? quote([message.value], ctx.redactor) : '';
  return `an error${said === '' ? '' : `: ${said}`}`;
}

/** The value of the last key that is `name` in any case (`name` in lower case), as encoding/json fills a field. */
function lastEntry(entries: [string, JsonNode][], name: string): JsonNode | undefined {
  for (let i = entries.length - 1; i >= 0; i--) if (entries[i][0].toLowerCase() === name) return entries[i][1];
  return undefined;
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
    const parsed = parseHostPort(value || defaultScannerV4(role), 8443);
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
/** Where StackRox's scanner V4 client dials when the integration names no endpoint. */
const defaultScannerV4 = (role: 'indexer' | 'matcher') => `scanner-v4-${role}.stackrox.svc:8443`;

/** The host:port each gRPC or TCP check of a configuration dials, by field, StackRox's in-cluster defaults included. */
export function grpcTargets(configName: string, config: Record<string, unknown>, nodeScanner: boolean): Record<string, string> {
  const targets: Record<string, string> = {};
  const add = (field: string, value: unknown, fallback: string) => {
    const parsed = parseHostPort((typeof value === 'string' && value) || fallback, 8443);
    if (typeof parsed !== 'string') targets[`${configName}.${field}`] = `${parsed.host.includes(':') ? `[${parsed.host}]` : parsed.host}:${parsed.port}`;
  };
  if (configName === 'clairify' && nodeScanner) add('grpcEndpoint', config.grpcEndpoint, DEFAULT_SCANNER_GRPC);
  if (configName === 'scannerV4') {
    add('indexerEndpoint', config.indexerEndpoint, defaultScannerV4('indexer'));
    add('matcherEndpoint', config.matcherEndpoint, defaultScannerV4('matcher'));
  }
  return targets;
}
// The scanner's own service (stackrox/scanner api/v1/ping.proto): Ping(Empty) returns PongMessage.
const PING = '/scannerV1.PingService/Ping';

/**
 * Clairify as NODE_SCANNER, tested as StackRox tests it (clairify.go TestNodeScanner): a gRPC
 * Ping over TLS on `grpcEndpoint`, whose answer must decode as a PongMessage. The channel dials
 * the first of the host's allowed addresses that accepts a connection (the endpoint policy, each
 * address in turn), with the host's name for TLS and :authority, so that gRPC's own resolver
 * never picks another; it reads an answer of at most `maxBodyBytes`, as HTTP does, and no proxy
 * (see the README). A peer that is no scanner (no PingService) fails the test.
 */
export async function checkClairifyNodeScanner(grpcEndpoint: string | undefined, ctx: CheckContext): Promise<string> {
  const parsed = parseHostPort(grpcEndpoint || DEFAULT_SCANNER_GRPC, 8443);
  if (typeof parsed === 'string') throw new TestFailure(`grpcEndpoint ${parsed}`);
  const { host, port } = parsed;
  const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  let address;
  try {
    address = await firstListening(host, port, ctx.limits, ctx.signal);
  } catch (err) {
    if (err instanceof NetworkFailure) throw new NetworkFailure(err.step, `node scanner: ${err.message}`);
    throw err;
  }
  const { Client, credentials, Metadata, status } = await import('@grpc/grpc-js');
  const roots = ctx.limits.ca === undefined ? null : Buffer.from([...rootCertificates, ...ctx.limits.ca].join('\n'));
  const client = new Client(`${address.family === 6 ? `[${address.address}]` : address.address}:${port}`, credentials.createSsl(roots), {
    'grpc.ssl_target_name_override': host,
    'grpc.default_authority': authority,
    // The service's one bound on what it reads of a peer (64 KiB by default, not gRPC's 4 MiB).
    'grpc.max_receive_message_length': ctx.limits.maxBodyBytes,
    // No proxy on any path: the endpoint policy must see the address connected to (README).
    'grpc.enable_http_proxy': 0,
  });
  let answer: Buffer | undefined;
  try {
    answer = await new Promise<Buffer | undefined>((resolve, reject) => {
      const deadline = new Date(Date.now() + ctx.limits.connectTimeout + ctx.limits.responseTimeout);
      const failed = (err: ServiceErrorLike) => {
        const details = typeof err.details === 'string' ? err.details : '';
        const why =
          err.code === status.UNIMPLEMENTED && details === 'No message received'
            ? `${authority} answered the gRPC Ping without a message, where a PongMessage was expected`
            : err.code === status.UNIMPLEMENTED
              ? `${authority} is no scanner: it does not serve scannerV1.PingService/Ping`
              : err.code === status.DEADLINE_EXCEEDED
                ? `${authority} did not answer the gRPC Ping in time`
                : err.code === status.RESOURCE_EXHAUSTED && /larger than/.test(details)
                  ? `${authority} answered the gRPC Ping with a message larger than ${ctx.limits.maxBodyBytes} bytes, more than this service reads of an answer`
                  : `gRPC Ping to ${authority} failed (${status[err.code as number] ?? err.code}): ${quote([withoutNote(details)], ctx.redactor)}`;
        reject(new TestFailure(`node scanner: ${ctx.redactor.redact(why)}`));
      };
      let call: { cancel(): void } | undefined;
      const cancel = () => call?.cancel();
      try {
        call = client.makeUnaryRequest(
          PING,
          () => Buffer.alloc(0),
          (bytes: Buffer) => bytes,
          Buffer.alloc(0),
          new Metadata(),
          { deadline },
          (err, value) => {
            ctx.signal.removeEventListener('abort', cancel);
            if (err === null) resolve(value);
            else failed(err);
          },
        );
      } catch (err) {
        // Not a failure of the peer's: a bug, answered 500 and logged.
        return reject(err);
      }
      ctx.signal.addEventListener('abort', cancel, { once: true });
    });
  } finally {
    client.close();
  }
  const pong = decodePong(answer ?? Buffer.alloc(0));
  if (typeof pong === 'string') throw new TestFailure(`node scanner: ${authority} answered the gRPC Ping with no PongMessage: ${pong}`);
  const said = [pong.status && `status ${pong.status}`, pong.scannerVersion && `version ${pong.scannerVersion}`].filter(Boolean).join(', ');
  const shown = quote([said], ctx.redactor);
  return `node scanner at ${authority} answered the gRPC Ping${shown ? ` (${shown})` : ''}`;
}

interface ServiceErrorLike {
  code?: number;
  details?: unknown;
}

// The status message of a failed gRPC call (a peer's grpc-message, or grpc-js's own, which may carry
// OpenSSL's report over several lines), without the empty note grpc-js ends its own with.
function withoutNote(text: string): string {
  const trimmed = text.trimEnd();
  return trimmed.endsWith('Resolution note:') ? trimmed.slice(0, -'Resolution note:'.length) : text;
}
