// Idle keep-alive connections closed by a sweep, not by a timer per request. node re-arms a
// socket timer at the end of every answer and clears it when the next request arrives: some 1,300
// instructions a request, a quarter of them in the timer list. Here a sweep a few times a
// keepAliveTimeout (at most once a second) closes a connection that has had no traffic since it
// saw it idle, keepAliveTimeout and node's buffer after: a connection closes between that and one
// sweep later, never before node would close it. Answers still say `Keep-Alive: timeout=N`.
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { idleConnections } from './connections';

/** How much longer than it advertises node keeps an idle connection: its keepAliveTimeoutBuffer's default. */
const BUFFER_MS = 1000;

/** What a sweep saw of an idle connection: traffic since means it was busy again. */
interface Seen {
  readonly at: number;
  readonly read: number;
  readonly written: number;
}

export class KeepAliveSweep {
  readonly #seen = new WeakMap<Socket, Seen>();
  readonly #limit: number;

  private constructor(
    private readonly server: Server,
    /** What answers advertise (ms), as node would from server.keepAliveTimeout. */
    readonly advertised: number,
  ) {
    this.#limit = advertised + BUFFER_MS;
  }

  /**
   * Takes over `server`'s keep-alive timeout of `timeout` ms (0: connections stay open) once it
   * listens, when node's list of its connections (made then) can be read; else node keeps it.
   */
  static take(server: Server, timeout: number): KeepAliveSweep | undefined {
    server.keepAliveTimeout = timeout;
    if (timeout <= 0) return undefined;
    const sweep = new KeepAliveSweep(server, timeout);
    server.once('listening', () => {
      if (idleConnections(server) === undefined) return;
      server.keepAliveTimeout = 0;
      const timer = setInterval(() => sweep.sweep(), Math.min(1000, Math.max(50, timeout / 10))).unref();
      server.once('close', () => clearInterval(timer));
    });
    return sweep;
  }

  /** An answer to be made: it advertises the timeout (node reads `_keepAliveTimeout` for its Keep-Alive header). */
  advertise(res: ServerResponse): void {
    (res as ServerResponse & { _keepAliveTimeout: number })._keepAliveTimeout = this.advertised;
  }

  /** Closes the connections idle for the limit; notes the others idle now. */
  sweep(now = performance.now()): void {
    for (const socket of idleConnections(this.server) ?? []) {
      const read = socket.bytesRead;
      const written = socket.bytesWritten;
      const seen = this.#seen.get(socket);
      if (seen === undefined || seen.read !== read || seen.written !== written) this.#seen.set(socket, { at: now, read, written });
      else if (now - seen.at >= this.#limit) socket.destroy();
    }
  }
}
