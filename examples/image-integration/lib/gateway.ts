// StackRox Central's HTTP side, grpc-gateway v2 (v2.29, as StackRox's go.mod pins it): the body is
// read as JSON whatever its media type, an answer is pretty-printed when the request asks for
// `application/json+pretty`, and every error is a (status, gRPC code) pair grpc-gateway can write.
import { STATUS_CODES } from 'node:http';
import type { BodyStream, Context, ErrorBody, RequestInfo } from 'funcrun';
import { grpcErrorBody, ServiceError } from './grpc';

/**
 * grpc-gateway's runtime/errors.go HTTPStatusFromCode: the HTTP status it answers each gRPC code
 * with. The service answers only statuses this table yields, each with the code that yields it
 * (grpc.ts grpcCode), so that a client that maps one to the other finds the pair it expects.
 */
export const HTTP_STATUS_FROM_CODE: Readonly<Record<number, number>> = {
  0: 200, // OK
  1: 499, // CANCELLED
  2: 500, // UNKNOWN
  3: 400, // INVALID_ARGUMENT
  4: 504, // DEADLINE_EXCEEDED
  5: 404, // NOT_FOUND
  6: 409, // ALREADY_EXISTS
  7: 403, // PERMISSION_DENIED
  8: 429, // RESOURCE_EXHAUSTED
  9: 400, // FAILED_PRECONDITION
  10: 409, // ABORTED
  11: 400, // OUT_OF_RANGE
  12: 501, // UNIMPLEMENTED
  13: 500, // INTERNAL
  14: 503, // UNAVAILABLE
  15: 500, // DATA_LOSS
  16: 401, // UNAUTHENTICATED
};

/**
 * A method the path has no route for: grpc-gateway's mux.go finds the path under another method
 * and calls DefaultRoutingErrorHandler with 405, which answers codes.Unimplemented with
 * http.StatusText(405), and HTTPStatusFromCode makes that a 501 (there is no 405 in the table).
 * Answered with errorAnswer(), so that its message is not funcrun's generic one for a 5xx.
 */
export function methodNotAllowed(): ServiceError {
  return new ServiceError(501, 'Method Not Allowed');
}

/**
 * What grpc-gateway refuses of a request before the method runs, from its headers alone, checked
 * in the module's `authorize` (before funcrun reads the body, so that funcrun's own 413 and 415 are
 * never the answer):
 * - a body longer than `limit`: StackRox's gRPC server refuses a message over its maximum with
 *   codes.ResourceExhausted (grpc MaxRecvMsgSize, pkg/grpc/server.go), which the gateway answers 429;
 * - a compressed body: the gateway does not decompress a request, so its JSON decoder fails on the
 *   bytes, codes.InvalidArgument, 400.
 */
export function admit(request: RequestInfo, limit: number): void {
  const encoding = request.headers['content-encoding'];
  // funcrun refuses any Content-Encoding but identity (415): refused here first.
  if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
    throw new ServiceError(400, 'the request body is not JSON: it is compressed (Content-Encoding), and compressed request bodies are not read');
  }
  const length = Number(request.headers['content-length']);
  if (length > limit) throw tooLarge(limit);
}

function tooLarge(limit: number): ServiceError {
  return new ServiceError(429, `the request body is larger than the largest accepted, ${limit} bytes`);
}

/**
 * The body, read from the stream funcrun hands over unread, up to `limit` bytes. grpc-gateway reads
 * every body as JSON (a media type it has no marshaler for gets the `*` one: runtime
 * marshaler_registry.go MarshalerForRequest), so the media type is not looked at. A body that could
 * not be read (the client went away, or sent too slowly) is a 400, as the gateway's failed decode is.
 */
export async function readBody(body: BodyStream, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) {
        // Nothing more is read; funcrun closes the connection after the answer.
        body.destroy();
        throw tooLarge(limit);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof ServiceError) throw err;
    if ((err as { statusCode?: unknown })?.statusCode === 413) throw tooLarge(limit);
    throw new ServiceError(400, `the request body could not be read: ${(err as Error)?.message ?? 'it ended early'}`);
  }
  return Buffer.concat(chunks, size);
}

const PRETTY = 'application/json+pretty';

/**
 * Whether the answer is pretty-printed, as StackRox chooses its marshaler: `?pretty` in the query
 * (with any value, or none) sets `Accept: application/json+pretty` (pkg/grpc/server.go
 * allowPrettyQueryParameter); an Accept header that is exactly a registered media type picks its
 * marshaler; else the request's Content-Type (its media type, parameters aside) does; else `*`,
 * compact (marshaler_registry.go MarshalerForRequest).
 */
export function wantsPretty(context: Context): boolean {
  if (Object.hasOwn(context.query, 'pretty')) return true;
  const accept = context.headers.accept;
  if (accept === PRETTY) return true;
  if (accept === '*') return false;
  const type = context.headers['content-type'];
  return type !== undefined && type.split(';')[0].trim().toLowerCase() === PRETTY;
}

/**
 * An error the function answers itself rather than throws to funcrun (whose 5xx bodies are generic):
 * the gRPC shape, compact, or as StackRox's pretty marshaler writes it (protojson with Indent "  "
 * and EmitUnpopulated: the same fields, two-space indented, `application/json`). `message` is the
 * error's own unless given.
 */
export function errorAnswer(err: ServiceError, pretty: boolean, message = err.message): { statusCode: number; headers: Record<string, string>; body: string } {
  const status = err.statusCode;
  const body: ErrorBody = { statusCode: status, error: STATUS_CODES[status] ?? 'Error', message };
  const shaped = grpcErrorBody(body, err);
  return {
    statusCode: status,
    headers: { ...err.headers, 'content-type': pretty ? 'application/json' : 'application/json; charset=utf-8' },
    body: pretty ? JSON.stringify(shaped, null, 2) : JSON.stringify(shaped),
  };
}

/** funcrun's text for an error it answers: a 5xx says only its status (errors.ts bodyOf), nothing internal. */
export function answeredMessage(err: ServiceError): string {
  return err.statusCode >= 500 ? (STATUS_CODES[err.statusCode] ?? 'Error') : err.message;
}
