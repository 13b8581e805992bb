// The one place where a thrown value becomes a status and a JSON body.
import { STATUS_CODES } from 'node:http';

/** An error with an HTTP status. Its message is shown to the client when the status is below 500. */
export class HttpError extends Error {
  readonly statusCode: number;
  /** Extra fields for the JSON body (for example where a parse failed). */
  readonly details?: Record<string, unknown>;
  /** Response headers that go with this error (for example `Allow` on a 405). */
  readonly headers?: Record<string, string>;

  constructor(statusCode: number, message: string, options?: { details?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'HttpError';
    this.statusCode = statusCode;
    this.details = options?.details;
    this.headers = options?.headers;
  }
}

function errorStatus(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 400 && value <= 599 ? value : undefined;
}

/**
 * The status for a thrown value: its own numeric `statusCode` (400 to 599), else a numeric
 * `code` in that range (faas-js-runtime's convention), else 500.
 */
export function statusOf(thrown: unknown): number {
  if (thrown === null || (typeof thrown !== 'object' && typeof thrown !== 'function')) return 500;
  const { statusCode, code } = thrown as { statusCode?: unknown; code?: unknown };
  return errorStatus(statusCode) ?? errorStatus(code) ?? 500;
}

export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  [detail: string]: unknown;
}

/**
 * The JSON body for an error: `{ statusCode, error, message }`, fastify's shape. Below 500 the
 * thrown message is the client's to read; at 500 and above the body is generic so that nothing
 * internal leaks (the detail goes to the log).
 */
export function errorBody(status: number, thrown: unknown): ErrorBody {
  const error = STATUS_CODES[status] ?? 'Error';
  if (status >= 500) return { statusCode: status, error, message: error };
  const message = (thrown as { message?: unknown } | undefined)?.message;
  const text = typeof message === 'string' && message ? message : error;
  const details = thrown instanceof HttpError ? thrown.details : undefined;
  return { statusCode: status, error, message: text, ...details };
}
