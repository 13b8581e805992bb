// `funcrun invoke`: sends one request (plain HTTP or a binary-mode CloudEvent) to a running
// function and describes the answer.
import { randomUUID } from 'node:crypto';

export interface InvokeOptions {
  target: string;
  format: 'http' | 'cloudevent';
  method: 'GET' | 'POST';
  /** The body; a FormData is sent as multipart/form-data, with the boundary fetch chooses. */
  data?: string | Buffer | FormData;
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
    headers['ce-id'] = options.id ?? randomUUID();
    headers['ce-source'] = options.source;
    headers['ce-type'] = options.type;
    headers['ce-specversion'] = '1.0';
    headers['ce-time'] = new Date().toISOString();
    for (const [name, value] of Object.entries(options.extensions)) headers[`ce-${name}`] = value;
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
      res = await fetch(url, { method, headers, body: sent, signal, redirect: 'manual' });
    } catch (err) {
      const cause = (err as { cause?: { name?: string; code?: string; message?: string } }).cause;
      if (cause?.name === 'NotReadableError') throw new Error(FILE_CHANGED);
      const reason =
        (err as Error).name === 'TimeoutError' ? `no answer within ${options.timeout / 1000}s` : (cause?.code ?? cause?.message ?? (err as Error).message);
      throw new Error(`cannot reach ${url.origin}: ${reason}`);
    }
    const location = res.headers.get('location');
    if (res.status < 300 || res.status > 308 || location === null || hops === MAX_REDIRECTS) break;
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
    // 307 and 308 repeat the request as it was (fetch serialises a FormData anew on each call, its
    // files read from disk again); the others turn it into a GET without a body.
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

/** A file-backed Blob fails to read once its file changes on disk; fetch then fails mid-body. */
export const FILE_CHANGED = 'a file of the form changed on disk while it was sent';

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
