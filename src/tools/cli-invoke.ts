// `funcrun invoke`'s command line: its options read and checked, and the body they give (--data,
// a file, or a form of --file and --field parts) built, before invoke-command.ts sends it.
import { accessSync, constants, existsSync, openAsBlob, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseMediaType } from '../body/media-type';
import { EXIT } from '../start/exit';
import { parseDuration, readFuncYaml } from '../start/func-yaml';
import { notOneOf } from '../start/suggest';
import { help, INVOKE_OPTIONS, INVOKE_USAGE, options, UsageError } from './cli-usage';
import { FILE_CHANGED, invoke } from './invoke-command';

export async function invokeCommand(args: string[]): Promise<void> {
  const { values, positionals, tokens } = options(args, INVOKE_OPTIONS, false, 'invoke');
  if (values.help) help(INVOKE_USAGE);
  if (positionals.length > 0) throw new UsageError(`invoke takes no arguments, got ${positionals.join(' ')}`);
  const method = ((values['request-type'] as string | undefined) ?? 'POST').toUpperCase();
  if (method !== 'GET' && method !== 'POST') throw new UsageError(notOneOf('--request-type', method, ['GET', 'POST']));
  const format = formatOf(values.format as string | undefined, resolve((values.path as string | undefined) ?? '.'));
  const extensions = extensionsOf((values.extension as string[] | undefined) ?? []);
  for (const option of ['id', 'source', 'type', 'content-type'] as const) {
    if (values[option] !== undefined) headerValue(`--${option}`, values[option] as string);
  }
  let target = targetOf((values.target as string | undefined) ?? 'http://localhost:8080');
  const timeout = timeoutOf((values.timeout as string | undefined) ?? '30s');
  // --file and --field in the order given: a form's parts keep the command line's order, as curl's -F do.
  const given = (tokens ?? []).flatMap((t) =>
    t.kind === 'option' && (t.name === 'file' || t.name === 'field') && t.value !== undefined ? [{ name: t.name, value: t.value }] : [],
  );
  const contentType = values['content-type'] as string | undefined;
  let dataGiven = values.data as string | undefined;
  if (method === 'GET') {
    if (contentType !== undefined) throw new UsageError(`--content-type does not go with --request-type GET: GET sends no body`);
    // GET sends no body: --data becomes the query string, the function contract's input of a GET.
    if (dataGiven !== undefined) {
      const query = queryOfData(dataGiven);
      if (query !== '') target = withQuery(target, query);
      process.stderr.write(`funcrun: GET sends no body: --data is sent as the query string (?${shown(query, false)})\n`);
      dataGiven = undefined;
    }
  }
  const data = await invokeBody(given, dataGiven, contentType, method);
  // Node 24's fetch (undici 7) leaves the read error of a file that changed while it was sent as
  // an unhandled rejection, rather than failing the request: without this, a stack trace.
  if (data instanceof FormData) process.on('unhandledRejection', fileChanged);
  const result = await invoke({
    target,
    format,
    method,
    data,
    contentType: contentType ?? 'application/json',
    id: values.id as string | undefined,
    source: (values.source as string | undefined) ?? '/funcrun/invoke',
    type: (values.type as string | undefined) ?? 'funcrun.invoke',
    extensions,
    timeout,
  });
  process.stdout.write(result.text + '\n');
  if (!result.ok) {
    process.stderr.write(`funcrun: the function answered ${result.status}\n`);
    process.exit(EXIT.FAILED);
  }
}

/**
 * --data of a GET as a query string: `name=value` pairs as they are written (`a=1&b=x%20y`), their
 * control characters percent-encoded (the URL parser would drop a tab or a line break unseen), or
 * a JSON object of strings, finite numbers and booleans (`{"customerId":1}`) encoded; every name
 * non-empty. Anything else has no query form and is bad use.
 */
function queryOfData(data: string): string {
  const refused = `--data ${shown(data, true)} cannot be a query string, and --request-type GET sends no body: give name=value pairs (a=1&b=2) or a JSON object of strings, finite numbers and booleans, each with a name, or send it with POST`;
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    // Not JSON: name=value pairs, each with a name, joined by &.
    if (/^[^&=]+=[^&]*(?:&[^&=]+=[^&]*)*$/.test(data)) return data.replace(CONTROL, encodeURIComponent);
    throw new UsageError(refused);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new UsageError(refused);
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(json)) {
    // A name is needed, as in the pairs form; 1e400 parses as Infinity, which is no number to send.
    const sendable = typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
    if (name === '' || !sendable) throw new UsageError(refused);
    query.append(name, String(value));
  }
  return query.toString();
}

// Control characters: C0, DEL and C1.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** `text` for a message: cut at 60 characters, its control characters escaped, in double quotes if `quoted`. */
function shown(text: string, quoted: boolean): string {
  const cut = text.length > 60 ? `${text.slice(0, 60)}...` : text;
  return (quoted ? JSON.stringify(cut) : cut).replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `target` with `query` after the query it has. */
function withQuery(target: string, query: string): string {
  const url = new URL(target);
  url.search = url.search.length > 1 ? `${url.search.slice(1)}&${query}` : query;
  return url.href;
}

/** --format, else func.yaml's invoke in `folder`, else http. */
function formatOf(given: string | undefined, folder: string): 'http' | 'cloudevent' {
  // Read only when it decides something: with --format, a func.yaml being edited does not stop a request.
  const funcYaml = given === undefined && existsSync(join(folder, 'func.yaml')) ? readFuncYaml(folder) : undefined;
  const format = given ?? (funcYaml?.invoke === 'cloudevent' ? 'cloudevent' : 'http');
  if (format !== 'http' && format !== 'cloudevent') throw new UsageError(notOneOf('--format', format, ['http', 'cloudevent']));
  return format;
}

/** The --extension name=value pairs, checked. */
function extensionsOf(pairs: string[]): Record<string, string> {
  const extensions: Record<string, string> = {};
  for (const pair of pairs) {
    const m = /^([a-z0-9]+)=(.*)$/s.exec(pair);
    if (m === null) throw new UsageError(`invalid --extension '${pair}': expected name=value, the name in a-z and 0-9`);
    extensions[m[1]] = headerValue('--extension', m[2], pair);
  }
  return extensions;
}

function targetOf(target: string): string {
  if (!URL.canParse(target) || !/^https?:$/.test(new URL(target).protocol)) {
    // Not echoed when it may hold credentials (user:password@).
    throw new UsageError(`invalid --target${target.includes('@') ? '' : ` '${target}'`}: expected a URL such as http://localhost:8080`);
  }
  return target;
}

function timeoutOf(text: string): number {
  try {
    return parseDuration(text, '--timeout');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/**
 * `value`, sent in a header: one that holds CR or LF is refused as bad use, rather than failing
 * as the request is made (no header can carry them, nor an event attribute's once decoded; a
 * command line cannot hold NUL). --content-type is sent as it is, so it must be Latin-1 too; an
 * event's attributes are percent-encoded beyond printable ASCII (invoke-command.ts).
 */
function headerValue(option: string, value: string, given = value): string {
  if (/[\r\n]/.test(value)) throw new UsageError(`invalid ${option} ${JSON.stringify(given)}: a header value cannot hold CR or LF`);
  if (option === '--content-type' && /[^\u0000-\u00ff]/.test(value))
    throw new UsageError(`invalid ${option} ${JSON.stringify(given)}: a header value holds Latin-1 characters only`);
  return value;
}

/** A form's file changed on disk while it was sent: one line and exit code 1; any other rejection is left to crash. */
function fileChanged(err: unknown): void {
  if (!(err instanceof DOMException && err.name === 'NotReadableError')) throw err;
  process.stderr.write(`funcrun: ${FILE_CHANGED}\n`);
  process.exit(EXIT.FAILED);
}

/** A part of a form: a file (`--file field=path`) or a text field (`--field name=value`); `option` as it was given. */
type FormFile = { option: string; field: string; path: string; type: string };
type FormPart = FormFile | { option: string; field: string; value: string };

/**
 * What invoke sends: --data, the bytes of --file <path>, or a multipart form of
 * --file <field>=<path> and --field <name>=<value> (`given`, in command-line order). Every file is
 * checked here, before anything is sent.
 */
async function invokeBody(given: { name: string; value: string }[], data: string | undefined, contentType: string | undefined, method: string) {
  const bodyFiles: string[] = [];
  const parts: FormPart[] = [];
  for (const { name, value } of given) {
    const part = name === 'field' ? formField(value) : formFile(value);
    if (part === undefined) bodyFiles.push(value);
    else parts.push(part);
  }
  const form = parts[0]?.option;
  if (bodyFiles.length > 1)
    throw new UsageError(`give one --file <path> as the body, not ${bodyFiles.length}; the files of a form are named --file <field>=<path>`);
  if (bodyFiles.length === 1 && form !== undefined)
    throw new UsageError(`--file ${bodyFiles[0]} is the body and ${form} makes a form: give one or the other (a path with = in it is written ./a=b)`);
  if (data !== undefined && bodyFiles.length === 1) throw new UsageError('give --data or --file, not both');
  if (data !== undefined && form !== undefined) throw new UsageError(`give --data or a form (${form}), not both`);
  if (form !== undefined) return formBody(parts, contentType, method);
  if (bodyFiles.length === 1 && method !== 'POST')
    throw new UsageError(`--file ${bodyFiles[0]} is a body, and --request-type ${method} sends none: send it with POST`);
  if (bodyFiles.length === 1) {
    const path = bodyFiles[0];
    try {
      // Streamed as it is sent (invoke-command.ts): checked now, so that nothing is sent for a file that cannot be.
      const stats = statSync(path);
      if (stats.isDirectory()) throw Object.assign(new Error('a folder'), { code: 'EISDIR' });
      accessSync(path, constants.R_OK);
      return { path, regular: stats.isFile() };
    } catch (err) {
      throw new UsageError(`cannot read --file ${path}: ${unreadable(err)}`);
    }
  }
  return data ?? (method === 'POST' ? '{"message":"Hello World"}' : undefined);
}

/**
 * `--file field=path[;type=t]`: a file of a form when the text before the first `=` is a field
 * name (not empty, no `/`); undefined when the whole value is a path, the body's.
 */
function formFile(value: string): FormFile | undefined {
  const equals = value.indexOf('=');
  const field = value.slice(0, equals);
  if (equals <= 0 || field.includes('/')) return undefined;
  let path = value.slice(equals + 1);
  // The type is the one given, as curl's -F takes it, never guessed from the name.
  let type = 'application/octet-stream';
  const suffix = path.lastIndexOf(';type=');
  if (suffix !== -1) {
    type = path.slice(suffix + ';type='.length);
    path = path.slice(0, suffix);
    // Blob drops a type outside printable ASCII: refused here rather than sent as another.
    if (parseMediaType(type) === undefined || /[^\x20-\x7e]/.test(type))
      throw new UsageError(`invalid type in --file ${value}: expected a media type such as image/png`);
  }
  return { option: `--file ${value}`, field, path, type };
}

function formField(value: string): FormPart {
  const equals = value.indexOf('=');
  if (equals <= 0) throw new UsageError(`invalid --field '${value}': expected name=value`);
  return { option: `--field ${value}`, field: value.slice(0, equals), value: value.slice(equals + 1) };
}

async function formBody(parts: FormPart[], contentType: string | undefined, method: string): Promise<FormData> {
  const form = parts[0].option;
  if (contentType !== undefined)
    throw new UsageError(
      `--content-type does not go with a form (${form}): it is multipart/form-data with a boundary of its own; a file's type is --file <field>=<path>;type=<type>`,
    );
  if (method !== 'POST') throw new UsageError(`a form (${form}) is sent with POST, not --request-type ${method}`);
  const body = new FormData();
  for (const part of parts) {
    if ('value' in part) body.append(part.field, part.value);
    else body.append(part.field, await fileBlob(part), basename(part.path));
  }
  return body;
}

/** A file of a form as a Blob: fetch streams it from disk as it sends, and again on a 307 or 308. */
async function fileBlob(part: FormFile): Promise<Blob> {
  try {
    // A pipe or a device has no size to send by; only regular files go in a form.
    if (!statSync(part.path).isFile()) throw new Error('not a regular file');
    accessSync(part.path, constants.R_OK);
    return await openAsBlob(part.path, { type: part.type });
  } catch (err) {
    throw new UsageError(`cannot read ${part.option}: ${unreadable(err)}`);
  }
}

/** Why a file cannot be read, in words (its code where there are none). */
function unreadable(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES') return 'not allowed to read it';
  if (code === 'EISDIR') return 'it is a folder';
  return code ?? (err as Error).message;
}
