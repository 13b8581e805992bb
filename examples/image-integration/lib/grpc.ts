// The gRPC-gateway error shape StackRox clients parse: { code, message, details, error }.
import type { ErrorBody } from 'funcrun';

/** gRPC status codes (google.rpc.Code) for the HTTP statuses this service answers. */
const CODES: Record<number, number> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  403: 7, // PERMISSION_DENIED
  404: 5, // NOT_FOUND
  405: 12, // UNIMPLEMENTED
  409: 6, // ALREADY_EXISTS
  413: 8, // RESOURCE_EXHAUSTED
  415: 3,
  429: 8,
  499: 1, // CANCELLED
  500: 13, // INTERNAL
  501: 12,
  503: 14, // UNAVAILABLE
  504: 4, // DEADLINE_EXCEEDED
};

export function grpcCode(status: number): number {
  return CODES[status] ?? (status >= 500 ? 13 : 3);
}

export interface FieldViolation {
  field: string;
  description: string;
}

export interface GrpcError {
  code: number;
  message: string;
  details: unknown[];
  error: string;
}

/** An error answered with this service's shape; `details` go into the body as they are. */
export class ServiceError extends Error {
  readonly statusCode: number;
  readonly details: unknown[];
  readonly headers?: Record<string, string>;
  constructor(statusCode: number, message: string, details: unknown[] = [], headers?: Record<string, string>) {
    super(message);
    this.name = 'ServiceError';
    this.statusCode = statusCode;
    this.details = details;
    this.headers = headers;
  }
}

/** 400 with a google.rpc.BadRequest listing every violation. */
export function badRequest(message: string, violations: FieldViolation[]): ServiceError {
  return new ServiceError(400, message, [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: violations }]);
}

/** The module's `errorBody`: funcrun's error body in the gRPC-gateway shape. */
export function grpcErrorBody(body: ErrorBody, thrown: unknown): GrpcError {
  const details = thrown instanceof ServiceError ? thrown.details : [];
  const message = thrown instanceof ServiceError ? body.message : runtimeMessage(body);
  return { code: grpcCode(body.statusCode), message, details, error: message };
}

/**
 * The runtime's own 4xx answers (a body it could not parse, before this service ran) may quote a
 * little of the body, such as an XML tag name, which may be a secret: they are answered with a
 * fixed text. Those about the request's shape, not its content (404, 405, 413...), keep theirs.
 */
function runtimeMessage(body: ErrorBody): string {
  switch (body.statusCode) {
    case 400:
      return 'the request body is not valid JSON';
    case 415:
      return 'the request body must be JSON (application/json)';
    default:
      return body.message;
  }
}
