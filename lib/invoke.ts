// `funcrun invoke`: sends one request (plain HTTP or a binary-mode CloudEvent) to a running
// function and describes the answer.
import { randomUUID } from 'node:crypto';

export interface InvokeOptions {
  target: string;
  format: 'http' | 'cloudevent';
  method: 'GET' | 'POST';
  data?: string | Buffer;
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
    throw new Error(`invalid --target '${options.target}': expected a URL such as http://localhost:8080`);
  }
  const headers: Record<string, string> = {};
  const hasBody = options.method === 'POST' && options.data !== undefined;
  if (hasBody) headers['content-type'] = options.contentType;
  if (options.format === 'cloudevent') {
    headers['ce-id'] = options.id ?? randomUUID();
    headers['ce-source'] = options.source;
    headers['ce-type'] = options.type;
    headers['ce-specversion'] = '1.0';
    headers['ce-time'] = new Date().toISOString();
    for (const [name, value] of Object.entries(options.extensions)) headers[`ce-${name}`] = value;
  }
  let res: Response;
  try {
    res = await fetch(url, {
      method: options.method,
      headers,
      body: hasBody ? options.data : undefined,
      signal: AbortSignal.timeout(options.timeout),
    });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const reason = (err as Error).name === 'TimeoutError' ? `no answer within ${options.timeout / 1000}s` : (cause?.code ?? cause?.message ?? (err as Error).message);
    throw new Error(`cannot reach ${url.origin}: ${reason}`);
  }
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, ok: res.status <= 299, text: describe(res, body) };
}

function describe(res: Response, body: Buffer): string {
  const lines = [`HTTP ${res.status} ${res.statusText}`];
  const attributes: string[] = [];
  for (const [name, value] of res.headers) {
    if (name.startsWith('ce-')) attributes.push(`  ${name.slice(3)}: ${value}`);
    else if (SHOWN.includes(name)) lines.push(`${name}: ${value}`);
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
  lines.push(attributes.length > 0 ? 'Data:' : '', shown);
  return lines.join('\n');
}
