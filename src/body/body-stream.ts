// The request body handed to a function unread, for a function that asks for it as a stream
// (`streamBody`): bytes are read from the request only as the function reads them, counted
// against the limit as they come.
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { runtimeError, type HttpError } from '../errors';
import { bodyIncomplete, tooLarge } from './body';
import { now } from '../lifecycle/deadline';
import type { Context } from '../context';
import type { HTTPFunctionReturn, StreamingFunction } from '../types';
import { Chunks } from './chunks';

const STREAMED = Symbol('funcrun body stream');

export interface BodyStreamOptions {
  /** Bytes at most: uploadLimit for a streamed body, bodyLimit for a fetch handler's Request. */
  limit: number;
  /** The setting the limit comes from, named in the 413. */
  setting: 'uploadLimit' | 'bodyLimit';
  /** How long the client may send nothing while the function waits (the request timeout); 0 is no bound. */
  idleLimit: number;
  /** Past the request timeout, bytes per second the client sends at least while the function waits (minBodyRate). */
  minRate: number;
  /** Called when the function first reads. */
  onFirstRead: () => void;
}

/** The stream a request's body is handed over in, if it is. */
export function bodyStreamOf(req: IncomingMessage): BodyStream | undefined {
  return (req as IncomingMessage & { [STREAMED]?: BodyStream })[STREAMED];
}

export class BodyStream extends Readable {
  /** Why the body failed (over the limit, a client idle too long): the answer, whatever the function returns. */
  refused: HttpError | undefined = undefined;
  #received = 0;
  #reading = false;
  /** Since when the function waits for bytes (it has read all there were); undefined while it is behind. */
  #waitingSince: number | undefined = undefined;
  /** How long it waited in the current window, before #waitingSince. */
  #waited = 0;
  #pace: NodeJS.Timeout | undefined;
  readonly #req: IncomingMessage;
  readonly #limit: number;
  readonly #setting: 'uploadLimit' | 'bodyLimit';
  readonly #idleLimit: number;
  readonly #minRate: number;
  /** Called when the function first reads: `100 Continue`, for a client that waits for it. */
  readonly #onFirstRead: () => void;
  /** While whole() reads: the chunks so far, and its promise's ends. */
  #whole: { chunks: Chunks; resolve: (body: Buffer) => void; reject: (err: Error) => void } | undefined = undefined;
  /** Whether whole() read the body to its end. */
  #readWhole = false;

  constructor(req: IncomingMessage, options: BodyStreamOptions) {
    super();
    this.#req = req;
    this.#limit = options.limit;
    this.#setting = options.setting;
    this.#idleLimit = options.idleLimit;
    this.#minRate = options.minRate;
    this.#onFirstRead = options.onFirstRead;
    (req as IncomingMessage & { [STREAMED]?: BodyStream })[STREAMED] = this;
    // A client that goes away destroys the stream, read or not.
    req.on('close', this.#onClose);
  }

  /**
   * node's deadline for the whole request passed. The function sets a streamed body's pace, so the
   * request goes on; from now on the client is held to a rate instead, over each window of the
   * request timeout in which the function spent half or more waiting for bytes: at least the
   * minimum rate for the time it waited, so that a client dripping its body (slowloris) cannot
   * hold the connection longer than the upload limit at that rate. Waits shorter than half a window
   * are not judged: the function, not the client, set that pace. False when the body is no longer
   * being read (node's 408 stands).
   */
  requestTimedOut(): boolean {
    if (this.destroyed || this.readableEnded || this.#idleLimit === 0) return false;
    if (this.#pace !== undefined) return true;
    // The first window starts now: bytes and waiting before it are not judged.
    let seen = this.#received;
    this.#waited = 0;
    if (this.#waitingSince !== undefined) this.#waitingSince = now();
    this.#pace = setInterval(() => {
      const at = now();
      const waited = this.#waited + (this.#waitingSince === undefined ? 0 : at - this.#waitingSince);
      const sent = this.#received - seen;
      seen = this.#received;
      this.#waited = 0;
      if (this.#waitingSince !== undefined) this.#waitingSince = at;
      if (waited >= this.#idleLimit / 2 && sent < (this.#minRate * waited) / 1000) this.#refuse(tooSlow(this.#minRate));
    }, this.#idleLimit).unref();
    return true;
  }

  override _read(): void {
    this.#start();
  }

  /**
   * The body read whole, without the stream between (a fetch handler's `text()`, `json()`, ...):
   * counted, refused and paced as a read of the stream is; it fails as the stream would (a 413
   * past the limit). Before the stream is read only: the stream is never read then.
   */
  whole(): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.#whole = { chunks: new Chunks(), resolve, reject };
      this.#start();
    });
  }

  /** Whether the body began to be read, by the stream or by whole(). */
  get started(): boolean {
    return this.#reading;
  }

  /** Whether the body was read to its end, by the stream or by whole(). */
  get finished(): boolean {
    return this.#readWhole || this.readableEnded;
  }

  #start(): void {
    const req = this.#req;
    this.#waitingSince ??= now();
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
    const whole = this.#whole;
    if (whole !== undefined) {
      this.#whole = undefined;
      whole.reject(err ?? Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    }
    this.#stop();
    clearInterval(this.#pace);
    // Nothing more is read: whatever the client still sends is left unread (its connection closes).
    this.#req.pause();
    callback(err);
  }

  #onData = (chunk: Buffer): void => {
    this.#received += chunk.length;
    if (this.#received > this.#limit) return this.#refuse(tooLarge(this.#limit, this.#setting));
    if (this.#whole !== undefined) return void this.#whole.chunks.add(chunk);
    if (!this.push(chunk)) {
      if (this.#waitingSince !== undefined) this.#waited += now() - this.#waitingSince;
      this.#waitingSince = undefined;
      this.#req.pause();
    }
  };

  #refuse(error: HttpError): void {
    this.refused = error;
    this.destroy(error);
  }

  #onEnd = (): void => {
    this.#stop();
    clearInterval(this.#pace);
    const whole = this.#whole;
    if (whole === undefined) return void this.push(null);
    this.#whole = undefined;
    this.#readWhole = true;
    whole.resolve(whole.chunks.bytes());
  };

  #onClose = (): void => {
    if (!this.#req.complete) this.destroy(bodyIncomplete());
  };

  #stop(): void {
    const req = this.#req;
    // Read to its end, the request emits nothing more they would take: they stay, holding only this
    // stream, which the request holds anyway; taking them off would cost each request more.
    if (req.readableEnded) return;
    req.removeListener('data', this.#onData);
    req.removeListener('end', this.#onEnd);
    req.removeListener('close', this.#onClose);
  }
}

function tooSlow(rate: number): HttpError {
  const message = `the client sent the body slower than ${rate} bytes per second (minBodyRate) while the function waited for it`;
  return runtimeError('FUNCRUN_REQUEST_TIMEOUT', message, { details: { limit: rate, setting: 'minBodyRate' } });
}

/**
 * Makes a handler take its request body as a stream, unread: `export const handle = streamed(async (context, body) => ...)`.
 * It sets `streamBody`, which a route's handler or a named function may also set itself.
 */
export function streamed(handler: (context: Context, body: BodyStream) => HTTPFunctionReturn | Promise<HTTPFunctionReturn>): StreamingFunction {
  return Object.assign(handler, { streamBody: true as const });
}
