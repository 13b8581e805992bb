// A connection's bookkeeping: the requests on it whose answers are not finished yet (more than one
// when pipelined), and malformed HTTP, answered only when no response is in flight on it.
import { bodyStreamOf } from '../body/body-stream';
import { Server, STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { errorBody, runtimeError } from '../errors';
import { ERROR_CODES, type ErrorCode } from '../error-codes';
import { JSON_TYPE } from '../send';

// Requests on a connection whose answers are not finished yet (more than one when pipelined),
// and whether the connection is to be closed once they are (malformed bytes followed them).
// This module alone reads and writes them.
const PENDING = Symbol('funcrun pending requests');
const CLOSING = Symbol('funcrun closing');
const LATEST = Symbol('funcrun latest request');
// Set once an error answer was written straight to the socket: it is closing, lingering.
const ANSWERED = Symbol('funcrun answered raw');
// Set once an answer on it says `connection: close`: the requests node dispatches on it afterwards are not run.
const LAST = Symbol('funcrun last answer');
// The latest answer made while an earlier one on the connection was still being sent: queued, its head written into node's buffer.
const QUEUED = Symbol('funcrun queued answer');
// The origin its requests' Host header gives (a fetch handler's request.url begins with it), and that Host.
const ORIGIN = Symbol('funcrun origin');
type CountedSocket = Socket & {
  [PENDING]?: number;
  [CLOSING]?: boolean;
  [LATEST]?: IncomingMessage;
  [ANSWERED]?: boolean;
  [LAST]?: boolean;
  [QUEUED]?: ServerResponse;
  [ORIGIN]?: { readonly host: string | undefined; readonly origin: string };
};

// Responses counted as answered by the fault handler, which answers a crashed request while its
// onRequest may still finish later. (A set beside them, not a property: adding one to every
// response would give node's own code two shapes of them.)
const answeredEarly = new WeakSet<ServerResponse>();

/**
 * The origin (`http://host:port`) of a request, as `make` gives it from the request's Host header
 * (`host`) and its connection: made once per connection while its requests name the same Host.
 */
export function connectionOrigin(req: IncomingMessage, host: string | undefined, make: (req: IncomingMessage) => string): string {
  const socket = req.socket as CountedSocket;
  const known = socket[ORIGIN];
  if (known !== undefined && known.host === host) return known.origin;
  const origin = make(req);
  socket[ORIGIN] = { host, origin };
  return origin;
}

/**
 * A request has arrived on its connection: its answer is pending until requestAnswered. False
 * when an answer on the connection already said `connection: close` (lastAnswer): node's parser
 * still dispatches the requests pipelined behind it (a body left unread is parsed only after its
 * answer was decided), but that answer closes the connection before theirs could be sent. Such a
 * request is not run, and not answered: by HTTP, a request after a `connection: close` answer was
 * not processed, and the client may retry it, even when it is not idempotent.
 */
export function requestArrived(req: IncomingMessage): boolean {
  const socket = req.socket as CountedSocket;
  if (socket[LAST] === true) return false;
  socket[PENDING] = (socket[PENDING] ?? 0) + 1;
  socket[LATEST] = req;
  return true;
}

/**
 * A request pipelined behind an answer not finished yet (node has queued its response): `run` is
 * called once its turn comes, when the connection goes on. Run at once, it would do its work
 * while the answer before it may still fail midway or close the connection, and then its own
 * answer could never be sent: the client would send it again, and it would run twice. Behind an
 * answer that closed the connection it is not run (by HTTP it was not processed), and counts as
 * answered; behind one cut midway its turn never comes.
 */
export function inItsTurn(req: IncomingMessage, res: ServerResponse, run: () => void): void {
  res.once('socket', () => {
    const socket = req.socket as CountedSocket;
    if (socket[LAST] === true) answered(socket);
    else run();
  });
}

/** The answer `res` closes its connection: the requests node dispatches on it from now on are not run (requestArrived). */
export function lastAnswer(req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('connection', 'close');
  (req.socket as CountedSocket)[LAST] = true;
}

/**
 * An answer that cannot be finished: its head and part of its body were written, and what was to
 * follow failed (a streamed body's error). The connection is closed without the answer's end (no
 * terminating chunk), so that a client tells an incomplete answer from a complete one; but only
 * once what was written has been flushed (node holds a chunk back until the next tick, and
 * destroying a socket drops what it still holds), so that the status and the chunks sent before
 * the failure reach the client. No request behind it runs (requestArrived). A client that does not
 * read is cut after LINGER_MS.
 */
export function cutAnswer(res: ServerResponse): void {
  const socket = res.socket as (CountedSocket & { _httpMessage?: ServerResponse | null }) | null;
  // An answer queued behind others on its connection holds its bytes itself: none of it can be sent.
  if (socket === null || socket.destroyed || socket._httpMessage !== res) return void res.destroy();
  socket[LAST] = true;
  // Node 24.22 holds what an answer wrote in the answer itself while it is corked (until the next
  // tick): uncorked here, it goes to the socket before the socket's side is ended.
  while (res.writableCorked > 0) res.uncork();
  const cut = () => socket.destroy();
  const linger = setTimeout(cut, LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
  socket.once('finish', cut);
  // Ending the socket's side writes what it holds (uncorked), then closes it.
  socket.end();
}

/**
 * An answer decided while its request's body is still coming, unread. A body of a declared length
 * within `dropWithin` (the body limit) that nothing has read yet is left to node, which reads and
 * drops it once the answer is sent (req._dump()): the connection goes on, and the requests
 * pipelined behind it are run. (A synchronous answer always comes before the body's bytes are
 * parsed, even those that arrived with its head.) Any other body closes the connection after the
 * answer, lingering so that the client reads it: a chunked body, whose end nothing bounds; one
 * over the limit (a 413), a client may send forever or slowly; one the function began to read
 * (node no longer drops what follows); one whose client waits for `100 Continue`, never sent.
 */
export function closeUnread(req: IncomingMessage, res: ServerResponse, dropWithin: number): void {
  if (droppable(req, dropWithin)) return;
  lastAnswer(req, res);
  lingerAfter(req);
}

/**
 * After its answer, a body that the function began to read and left unfinished (a fetch
 * handler's): node drops only a body nothing read, and would leave this one where it stopped, the
 * connection stuck behind it. What is left of it is read and dropped when its declared length is
 * within `dropWithin`; else the connection closes once the answer is sent, lingering.
 */
export function leaveRest(req: IncomingMessage, res: ServerResponse, dropWithin: number): void {
  const socket = req.socket as CountedSocket;
  if (req.complete || socket[LAST] === true) return;
  const { headers } = req;
  if (headers['transfer-encoding'] === undefined && Number(headers['content-length']) <= dropWithin) {
    req.removeAllListeners('data');
    return void req.resume();
  }
  if (!res.headersSent) return closeUnread(req, res, -1);
  socket[LAST] = true;
  lingerAfter(req);
  if (res.writableFinished) socket.destroySoon();
  else res.once('finish', () => socket.destroySoon());
}

function droppable(req: IncomingMessage, limit: number): boolean {
  const { headers } = req;
  if (headers['transfer-encoding'] !== undefined || headers.expect !== undefined) return false;
  const length = Number(headers['content-length']);
  // node's own field: whether the body began to be read, after which node no longer drops what is left.
  return length <= limit && (req as IncomingMessage & { _consuming?: unknown })._consuming === false && !req.readableDidRead;
}

/**
 * The answer to `req` is done with: written, or queued behind the answers pipelined before it,
 * then pending until it is sent. Counts once per request: `early` when the fault handler says it
 * before the request's own last step does.
 */
export function requestAnswered(req: IncomingMessage, res: ServerResponse, early = false): void {
  if (answeredEarly.has(res)) return;
  if (early) answeredEarly.add(res);
  const socket = req.socket as CountedSocket;
  if (res.socket === null && !res.writableFinished && !res.destroyed) {
    // Only the latest request's answer can be its connection's last (closeQueued()): an earlier
    // one that ends after it (the requests before it finished out of order) is not.
    if (socket[LATEST] === req) socket[QUEUED] = res;
    res.once('close', () => answered(socket));
  } else answered(socket);
}

function answered(socket: CountedSocket): void {
  if (--socket[PENDING]! > 0) return;
  // Read only while a request is pending: holding it longer would keep the request, its headers
  // and its stream alive between requests, through the young generation's collections (RSS).
  socket[LATEST] = undefined;
  socket[QUEUED] = undefined;
  if (socket[CLOSING]) socket.destroySoon();
}

/**
 * While draining, or once malformed bytes followed the requests on a connection, the answer to
 * the latest request on it closes it, whether or not the answers to requests before it are still
 * to come (they are sent first). An earlier one must not: the requests pipelined behind it were
 * run, and their answers are still to be sent.
 */
export function closeAfter(req: IncomingMessage, res: ServerResponse, draining: boolean): void {
  const socket = req.socket as CountedSocket;
  if ((draining || socket[CLOSING] === true) && !res.headersSent && (socket[PENDING] === 1 || socket[LATEST] === req)) lastAnswer(req, res);
}

/** What node keeps of an answer queued behind another on its connection (node's own names). */
interface Held {
  _header?: unknown;
  _last?: unknown;
  outputData?: { data: unknown }[];
  outputSize?: unknown;
}

// What node writes in a head when the connection is kept alive.
const KEPT_ALIVE = /\r\nConnection: keep-alive\r\n(?:Keep-Alive: [^\r\n]*\r\n)?/i;

/**
 * A drain has begun: where the latest request on a connection was answered before, behind an
 * answer still being made or sent, its answer (its head made then, saying `keep-alive`) is the
 * connection's last; it is made to say `connection: close`, as closeAfter() has the answers made
 * from now on say, and node closes the connection after it. Its head is still in node's buffer,
 * unsent; where node does not keep it as it did, the answer is left as it is (and the connection
 * closed once idle, closeIdle()).
 */
export function closeQueued(server: Server): void {
  for (const socket of (accepted.get(server) ?? []) as Set<CountedSocket>) {
    const res = socket[QUEUED];
    if (res === undefined || res.socket !== null || socket[LATEST] !== res.req || socket[LAST] === true) continue;
    const held = res as ServerResponse & Held;
    const head = held._header;
    const first = held.outputData?.[0];
    if (typeof head !== 'string' || typeof first?.data !== 'string' || !first.data.startsWith(head) || typeof held.outputSize !== 'number') continue;
    const closing = head.replace(KEPT_ALIVE, '\r\nConnection: close\r\n');
    if (closing === head) continue;
    first.data = closing + first.data.slice(head.length);
    held.outputSize -= head.length - closing.length;
    held._header = closing;
    held._last = true;
    res.shouldKeepAlive = false;
    socket[LAST] = true;
  }
}

/**
 * Malformed HTTP never reaches a handler: answer it with a JSON error and close. Only when no
 * response is pending on the connection, as node's own handler does: bytes written into a
 * response in flight would corrupt it.
 */
export function clientError(err: NodeJS.ErrnoException, connection: Socket): void {
  const socket = connection as CountedSocket;
  // The parser errs again on what a client still sends after its error answer: that answer's linger goes on.
  if (socket[ANSWERED] === true && err.code !== 'ECONNRESET') return;
  if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
  // A body streamed to a function goes at the function's pace: the stream holds the client to the timeout instead.
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket[LATEST] !== undefined && bodyStreamOf(socket[LATEST])?.requestTimedOut() === true) return;
  // Complete requests that came before the malformed bytes are still answered; then it closes.
  // (Malformed bytes inside a request's body belong to that request: it is cut, below.)
  if ((socket[PENDING] ?? 0) > 0 && socket[LATEST]?.complete === true) return void (socket[CLOSING] = true);
  // node's own handler reads the same field: the response on this socket, if any. One already
  // begun cannot be followed by an error answer; nor can answers pipelined before this request.
  // Otherwise the request the bytes belong to (a body too slow, or malformed chunks) is answered.
  const pending = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (pending !== null && pending !== undefined && (pending.headersSent || (socket[PENDING] ?? 0) > 1)) return void socket.destroy();
  if (err.code === 'HPE_HEADER_OVERFLOW') rawError(socket, 'FUNCRUN_HEADERS_TOO_LARGE', '');
  else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') rawError(socket, 'FUNCRUN_REQUEST_TIMEOUT', '');
  else rawError(socket, 'FUNCRUN_MALFORMED_REQUEST', 'malformed HTTP request');
}

/**
 * How long a connection closed after an error answer is kept for the client to read it. Ending
 * only this side would leave it half-open for as long as the client likes: each such socket holds
 * a connection slot, and keeps a drain from ending.
 */
const LINGER_MS = 1000;

/** An error answer written straight to a socket that no ServerResponse owns, then closed. */
export function rawError(socket: Socket, code: ErrorCode, message: string): void {
  (socket as CountedSocket)[ANSWERED] = true;
  const status = ERROR_CODES[code].status;
  const body = JSON.stringify(errorBody(status, runtimeError(code, message)));
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: ${JSON_TYPE}\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  // What the client still sends is read and dropped, so that closing does not reset the
  // connection before the answer is read; then it is closed whatever the client does.
  socket.resume();
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}

/**
 * An answer sent before its request's body was read (a 413, or a function that did not read its
 * streamed body): the connection closes after it, as node closes it, but what the client still
 * sends is read and dropped for up to LINGER_MS first. Closed at once, the connection is reset
 * under a client still writing its body, which then gets a broken pipe instead of the answer.
 */
export function lingerAfter(req: IncomingMessage): void {
  const socket = req.socket;
  // node calls it once the answer is written, on a connection the answer closes.
  socket.destroySoon = function lingeringClose(this: Socket): void {
    this.end();
    req.resume();
    const linger = setTimeout(() => this.destroy(), LINGER_MS);
    linger.unref();
    this.once('close', () => clearTimeout(linger));
  };
}

// node:http's own list of a server's connections, which knows the ones between requests (none
// being received). Not public: where it is missing, closeIdle falls back to node's method.
type ConnectionList = { idle(): { socket: CountedSocket & { _httpMessage?: ServerResponse | null } }[] };
let connectionsKey: symbol | undefined;

function connectionsOf(server: Server): ConnectionList | undefined {
  connectionsKey ??= Object.getOwnPropertySymbols(server).find((key) => key.description === 'http.server.connections');
  const list = connectionsKey === undefined ? undefined : (server as unknown as Record<symbol, unknown>)[connectionsKey];
  return list !== null && typeof list === 'object' && typeof (list as ConnectionList).idle === 'function' ? (list as ConnectionList) : undefined;
}

/**
 * Closes the connections with nothing left to do, as node's closeIdleConnections does, but not
 * one that still has answers to write: node's destroys a connection whose last answer has ended
 * while its bytes are still in the socket's buffer (a slow reader gets it cut), and one whose
 * pipelined answers wait behind an ended one. Those are closed once written.
 */
export function closeIdle(server: Server): void {
  const list = connectionsOf(server);
  if (list === undefined) return Server.prototype.closeIdleConnections.call(server);
  for (const { socket } of list.idle()) {
    // Answers still to come: the last of them closes the connection (closeAfter), or the next sweep does.
    if ((socket[PENDING] ?? 0) > 0) continue;
    const message = socket._httpMessage;
    if (message !== null && message !== undefined && !message.writableFinished) continue;
    // Closed once what it holds is written; a reader that never reads is cut at the grace deadline.
    if (socket.writableLength > 0) socket.destroySoon();
    else socket.destroy();
  }
}

/**
 * The connections between requests that have nothing left to do (the keep-alive sweep's, keep-alive.ts):
 * answered every request that came on them, their answers written, no new request begun, not closing;
 * undefined where node's list of connections cannot be read.
 */
export function idleConnections(server: Server): Socket[] | undefined {
  const list = connectionsOf(server);
  if (list === undefined) return undefined;
  const idle: Socket[] = [];
  for (const { socket } of list.idle()) {
    // One that has had no request is node's (its headersTimeout), and one closing is closed already.
    if (socket[PENDING] !== 0 || socket[CLOSING] === true || socket[LAST] === true || socket[ANSWERED] === true) continue;
    const message = socket._httpMessage;
    if (socket.writableLength > 0 || (message !== null && message !== undefined && !message.writableFinished)) continue;
    idle.push(socket);
  }
  return idle;
}

// Every socket a server has accepted and not yet closed, whether node's HTTP code still owns it or
// not (one handed to 'connect', one closed after an error answer and lingering).
const accepted = new WeakMap<Server, Set<Socket>>();

/**
 * Sets up a server's connection handling: `server.close()` (which closes idle connections itself)
 * and a drain's sweeps follow closeIdle, and its sockets are known to destroyAll.
 */
export function manageConnections(server: Server): void {
  server.closeIdleConnections = () => closeIdle(server);
  const sockets = new Set<Socket>();
  accepted.set(server, sockets);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
}

/**
 * The end of a drain's grace period: every socket still open is destroyed, whoever owns it.
 * Returns how many held answers not yet written whole (a slow reader's): those answers are cut
 * too. Requests still unanswered are not counted here; the drain counts them itself.
 */
export function destroyAll(server: Server): number {
  const sockets = accepted.get(server) ?? new Set<Socket>();
  let unwritten = 0;
  for (const socket of sockets) {
    const message = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    const writing = socket.writableLength > 0 || (message !== null && message !== undefined && message.writableEnded && !message.writableFinished);
    if (writing && ((socket as CountedSocket)[PENDING] ?? 0) === 0) unwritten++;
  }
  server.closeAllConnections();
  for (const socket of sockets) socket.destroy();
  return unwritten;
}
