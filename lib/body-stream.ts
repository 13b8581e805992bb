// The request body handed to a function unread, for a function that asks for it as a stream
// (`streamBody`): bytes are read from the request only as the function reads them, counted
// against the limit as they come.
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { runtimeError, type HttpError } from './errors';
import { tooLarge } from './body';
import type { Context } from './context';
import type { HTTPFunctionReturn, StreamingFunction } from './types';

export class BodyStream extends Readable {
  /** Set once more than the limit arrived: the answer is then a 413, whatever the function returns. */
  overLimit: HttpError | undefined = undefined;
  #received = 0;
  #reading = false;
  readonly #req: IncomingMessage;
  readonly #limit: number;
  /** Called when the function first reads: `100 Continue`, for a client that waits for it. */
  readonly #onFirstRead: () => void;

  constructor(req: IncomingMessage, limit: number, onFirstRead: () => void) {
    super();
    this.#req = req;
    this.#limit = limit;
    this.#onFirstRead = onFirstRead;
    // A client that goes away destroys the stream, read or not.
    req.on('close', this.#onClose);
  }

  override _read(): void {
    const req = this.#req;
    if (!this.#reading) {
      this.#reading = true;
      req.on('data', this.#onData);
      req.on('end', this.#onEnd);
      this.#onFirstRead();
      // Already read to its end (a request without a body can be): nothing more will come.
      if (req.readableEnded) return void this.#onEnd();
    }
    req.resume();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.#stop();
    // Nothing more is read: whatever the client still sends is left unread (its connection closes).
    this.#req.pause();
    callback(err);
  }

  #onData = (chunk: Buffer): void => {
    this.#received += chunk.length;
    if (this.#received > this.#limit) {
      this.overLimit = tooLarge(this.#limit, 'uploadLimit');
      this.destroy(this.overLimit);
      return;
    }
    if (!this.push(chunk)) this.#req.pause();
  };

  #onEnd = (): void => {
    this.#stop();
    this.push(null);
  };

  #onClose = (): void => {
    if (!this.#req.complete) this.destroy(runtimeError('FUNCRUN_BODY_INCOMPLETE', 'the client closed the connection before the body was complete'));
  };

  #stop(): void {
    const req = this.#req;
    req.removeListener('data', this.#onData);
    req.removeListener('end', this.#onEnd);
    req.removeListener('close', this.#onClose);
  }
}

/**
 * Makes a handler take its request body as a stream, unread: `export const handle = streamed(async (context, body) => ...)`.
 * It sets `streamBody`, which a route's handler or a named function may also set itself.
 */
export function streamed(handler: (context: Context, body: BodyStream) => HTTPFunctionReturn | Promise<HTTPFunctionReturn>): StreamingFunction {
  return Object.assign(handler, { streamBody: true as const });
}
