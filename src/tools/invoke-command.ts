// `funcrun invoke`: sends one request (plain HTTP or a binary-mode CloudEvent) to a running
// function and describes the answer.
import { randomUUID } from 'node:crypto';
import type { Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import type { ClientRequest, IncomingMessage } from 'node:http';

/** `--file <path>`: the body, streamed from the file as it is sent, never read whole. */
export interface BodyFile {
  path: string;
  /** A regular file, read again for a 307 or 308; anything else (a pipe) is read once. */
  regular: boolean;
}

export interface InvokeOptions {
  target: string;
  format: 'http' | 'cloudevent';
  method: 'GET' | 'POST';
  /** The body; a FormData is sent as multipart/form-data, encoded as fetch encodes one, with its boundary. */
  data?: string | Buffer | FormData | BodyFile;
  /** Of a body that is not a form. */
  contentType: string;
  id?: string;
  source: string;
  type: string;
  extensions: Record<string, string>;
  timeout: number;
}

export interface InvokeResult {
  status: number;
  ok: boolean;
  text: string;
}

/** Headers worth showing of an answer; CloudEvent attributes are shown apart. */
const SHOWN = ['content-type', 'location', 'allow', 'www-authenticate', 'retry-after'];

export async function invoke(options: InvokeOptions): Promise<InvokeResult> {
  let url: URL;
  try {
    url = new URL(options.target);
  } catch {
    throw new Error('invalid target: expected a URL such as http://localhost:8080');
  }
  const headers: Record<string, string> = {};
  // Credentials in the URL are sent as Basic authorization, as curl sends them; fetch refuses such a URL.
  if (url.username !== '' || url.password !== '') {
    const credentials = `${decoded(url.username)}:${decoded(url.password)}`;
    headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  const hasBody = options.method === 'POST' && options.data !== undefined;
  if (hasBody && !(options.data instanceof FormData)) headers['content-type'] = options.contentType;
  if (options.format === 'cloudevent') {
    headers['ce-id'] = encoded(options.id ?? randomUUID());
    headers['ce-source'] = encoded(options.source);
    headers['ce-type'] = encoded(options.type);
    headers['ce-specversion'] = '1.0';
    headers['ce-time'] = new Date().toISOString();
    for (const [name, value] of Object.entries(options.extensions)) headers[`ce-${name}`] = encoded(value);
  }
  const signal = AbortSignal.timeout(options.timeout);
  let res: Response;
  let method: string = options.method;
  let sent = hasBody ? options.data : undefined;
  let notFollowed: string | undefined;
  // Redirects are followed on the target's own origin only: the request (its body, its event)
  // was meant for that function, not for wherever an answer points.
  for (let hops = 0; ; hops++) {
    try {
      res =
        isBodyFile(sent) || sent instanceof FormData
          ? await sendStreamed(url, method, headers, sent, signal)
          : await fetch(url, { method, headers, body: sent, signal, redirect: 'manual' });
    } catch (err) {
      if (err instanceof FileChanged) throw err;
      const cause = (err as { cause?: { name?: string; code?: string; message?: string } }).cause;
      // A form's file-backed Blob fails so once its file changes on disk.
      if (cause?.name === 'NotReadableError' || (err as Error | undefined)?.name === 'NotReadableError') throw new Error(FILE_CHANGED);
      // fetch's reason is its cause; node's client's (a --file body) the error itself.
      const failure = cause ?? (err as NodeJS.ErrnoException);
      const reason = signal.aborted ? `no answer within ${options.timeout / 1000}s` : (failure.code ?? failure.message ?? (err as Error).message);
      throw new Error(`cannot reach ${url.origin}: ${reason}${failure.code === 'ECONNREFUSED' ? NOTHING_LISTENS : ''}`);
    }
    const location = res.headers.get('location');
    if (res.status < 300 || res.status > 308 || location === null || hops === MAX_REDIRECTS) break;
    if ((res.status === 307 || res.status === 308) && isBodyFile(sent) && !sent.regular) {
      notFollowed = `redirect not followed: --file ${sent.path} is not a regular file, and its body cannot be sent again`;
      break;
    }
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      break;
    }
    if (next.origin !== url.origin) {
      notFollowed = `redirect to another origin (${next.origin}) not followed`;
      break;
    }
    await res.arrayBuffer();
    // 307 and 308 repeat the request as it was (a FormData is encoded anew on each call, its files
    // read from disk again); the others turn it into a GET without a body.
    if (res.status !== 307 && res.status !== 308) {
      method = 'GET';
      sent = undefined;
      delete headers['content-type'];
    }
    url = next;
  }
  const body = Buffer.from(await res.arrayBuffer());
  const text = describeAnswer(res, body);
  return { status: res.status, ok: res.status <= 299, text: notFollowed === undefined ? text : `${text}\n(${notFollowed})` };
}

const MAX_REDIRECTS = 5;
// What a refused connection means to someone who just ran invoke.
const NOTHING_LISTENS = ' (nothing listens there: start the function first, with funcrun serve or npm start, or give its --target)';

/** A file-backed Blob fails to read once its file changes on disk; fetch then fails mid-body. */
export const FILE_CHANGED = 'a file of the form changed on disk while it was sent';

/** The --file body changed on disk while it was sent: the request is cut before its last byte. */
class FileChanged extends Error {}

// Binary mode percent-encodes a value outside printable ASCII, and `"` and `%` (HTTP binding
// 3.1.3.2), as funcrun decodes it. (The command refuses CR and LF: no header may hold them decoded.)
const encoded = (text: string) => text.replace(/[^\x21-\x7e]|["%]/gu, (c) => encodeURIComponent(c).replace(/'/g, '%27'));

const isBodyFile = (data: unknown): data is BodyFile => typeof data === 'object' && data !== null && 'regular' in data;

/** Bytes read from the file at a time: the most of it held in memory, beside what the socket holds. */
const CHUNK = 64 * 1024;

/** A body streamed as it is sent: its own headers, its chunks, and what to close once it is sent. */
interface Streamed {
  headers: Record<string, string>;
  chunks: AsyncIterable<Uint8Array>;
  close(): Promise<void>;
}

/**
 * `--file <path>`: a regular file goes with its Content-Length; anything else (a pipe: --file
 * /dev/stdin) chunked, once. A file that changes while it is sent (its size or mtime) cuts the
 * request before its last byte, as a form's file does.
 */
async function fileBody(file: BodyFile): Promise<Streamed> {
  // Loaded here, so that a start of funcrun serve never reads it.
  const { open } = require('node:fs/promises') as typeof import('node:fs/promises');
  const handle = await open(file.path, 'r');
  try {
    const stats = await handle.stat();
    return {
      headers: stats.isFile() ? { 'content-length': String(stats.size) } : {},
      chunks: chunksOf(handle, stats, file.path),
      close: () => handle.close(),
    };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * A form, encoded as fetch encodes one (undici's serialiser, through a Response: its boundary
 * and parts), chunked; its files are file-backed Blobs, read from disk as they are sent.
 */
function formBody(form: FormData): Streamed {
  const encoded = new Response(form);
  return { headers: { 'content-type': encoded.headers.get('content-type')! }, chunks: encoded.body!, close: async () => {} };
}

/**
 * Sends a file or a form as the body with node's own client, not fetch: fetch keeps a copy of a
 * streamed body for a redirect it is not to follow (the fetch standard's clone of the request),
 * and of a form it sends, so the whole file would sit in memory.
 */
async function sendStreamed(url: URL, method: string, headers: Record<string, string>, data: BodyFile | FormData, signal: AbortSignal): Promise<Response> {
  // Loaded here, so that a start of funcrun serve never reads them.
  const { pipeline } = require('node:stream/promises') as typeof import('node:stream/promises');
  const { request } = (url.protocol === 'https:' ? require('node:https') : require('node:http')) as typeof import('node:http');
  const body = data instanceof FormData ? formBody(data) : await fileBody(data);
  let req: ClientRequest | undefined;
  try {
    const sending = request(url, { method, headers: { ...headers, ...body.headers }, signal });
    req = sending;
    // The answer may come before the body is sent whole (a function that refuses it early): it is
    // the answer, whatever then happens to the rest of the body.
    const answered = new Promise<IncomingMessage>((resolve, reject) => {
      sending.once('response', resolve);
      sending.on('error', reject);
    });
    const sent = pipeline(body.chunks, sending);
    const res = await Promise.race([answered, sent.then(() => answered)]);
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const answerHeaders = new Headers();
    for (let i = 0; i < res.rawHeaders.length; i += 2) answerHeaders.append(res.rawHeaders[i], res.rawHeaders[i + 1]);
    const status = res.statusCode ?? 0;
    // As fetch makes it: a status without a body has none.
    return new Response([204, 205, 304].includes(status) ? null : Buffer.concat(chunks), { status, statusText: res.statusMessage, headers: answerHeaders });
  } finally {
    req?.destroy();
    await body.close();
  }
}

/** The file's bytes, CHUNK at a time; a regular file's up to the size it had when the request began, each read checked against it. */
async function* chunksOf(handle: FileHandle, first: Stats, path: string): AsyncGenerator<Buffer> {
  if (!first.isFile()) {
    for (;;) {
      const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(CHUNK), 0, CHUNK, null);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  }
  for (let at = 0; at < first.size;) {
    const { bytesRead, buffer } = await handle.read(Buffer.allocUnsafe(Math.min(CHUNK, first.size - at)), 0, Math.min(CHUNK, first.size - at), at);
    const now = await handle.stat();
    if (bytesRead === 0 || now.size !== first.size || now.mtimeMs !== first.mtimeMs) throw new FileChanged(`--file ${path} changed on disk while it was sent`);
    at += bytesRead;
    yield buffer.subarray(0, bytesRead);
  }
}

// What the function sent is shown with its control characters escaped (not a terminal's escape
// sequences, nor a carriage return that hides a line); a body keeps its newlines and tabs.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const BODY_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
const printable = (text: string, pattern = CONTROL) => text.replace(pattern, escaped);

function describeAnswer(res: Response, body: Buffer): string {
  const lines = [`HTTP ${res.status} ${printable(res.statusText)}`];
  const attributes: string[] = [];
  for (const [name, value] of res.headers) {
    if (name.startsWith('ce-')) attributes.push(`  ${printable(name.slice(3))}: ${printable(value)}`);
    else if (SHOWN.includes(name)) lines.push(`${name}: ${printable(value)}`);
  }
  if (attributes.length > 0) lines.push('CloudEvent:', ...attributes);
  const type = res.headers.get('content-type') ?? '';
  if (body.length === 0) return lines.join('\n');
  let shown: string;
  if (/json/.test(type)) {
    try {
      shown = JSON.stringify(JSON.parse(body.toString('utf8')), null, 2);
    } catch {
      shown = body.toString('utf8');
    }
  } else if (/^text\/|xml/.test(type) || type === '') {
    shown = body.toString('utf8');
  } else {
    shown = `<${body.length} bytes of ${type}>`;
  }
  lines.push(attributes.length > 0 ? 'Data:' : '', printable(shown, BODY_CONTROL));
  return lines.join('\n');
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
