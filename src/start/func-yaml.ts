// func.yaml and the option values that arrive as text (flags and environment variables).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isIPv6 } from 'node:net';
import { parseLogLevel, type LogLevel } from '../log/log';
import { keepCompiled, requireCached, YAML_PARSER } from '../boot/code-cache';
import { keepFuncYaml, keptFuncYaml, placeOf, type Place } from './func-yaml-cache';

/**
 * A `run.envs` entry as Knative func reads it. An entry without a name imports every key of a
 * secret or config map (`value: '{{ secret:NAME }}'`), which only the platform can do.
 */
export interface EnvEntry {
  name?: string;
  value: string;
}

/** What funcrun reads from func.yaml. */
export interface FuncYaml {
  file: string;
  name?: string;
  invoke?: string;
  envs: EnvEntry[];
  liveness?: string;
  readiness?: string;
  /** A top-level `logLevel`, as faas-js-runtime reads it. */
  logLevel?: LogLevel;
}

/** A configuration problem found at start; the message names the file and line where there is one. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

// Characters of a setting's value a message shows, at most: a variable may hold anything, of any length.
const SHOWN_VALUE = 80;
// Escaped in a shown value: control characters (C0, DEL, C1), the line and paragraph separators and bidi controls.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2066-\u2069]/g;

/** A setting's value for a message (every start error echoes through this): cut at 80 characters with '…', unprintable characters escaped as \uXXXX. */
export function shownValue(value: string | number | boolean): string {
  const text = String(value);
  const cut = text.length > SHOWN_VALUE ? `${text.slice(0, SHOWN_VALUE)}…` : text;
  return cut.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

type YamlModule = typeof import('yaml');

/**
 * Reads `<folder>/func.yaml`; undefined when there is none. Throws ConfigError when it is malformed.
 * Each entry point reads it once (serve before loading the function, start() when given a folder,
 * serve --watch for each start) and hands the result on.
 */
export function readFuncYaml(folder: string): FuncYaml | undefined {
  const file = join(folder, 'func.yaml');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new ConfigError(`${file}: ${(err as Error).message}`);
  }
  const kept = keptFuncYaml(file, text);
  if (kept !== undefined) return kept;
  const places: (Place | undefined)[] = [];
  const config = parseFuncYaml(file, text, places);
  keepFuncYaml(file, text, config, places);
  return config;
}

/** func.yaml's values, checked; `places` gets where each run.envs value is written out in `text`, where it is. */
function parseFuncYaml(file: string, text: string, places: (Place | undefined)[]): FuncYaml {
  const source = text;
  // Only functions with a func.yaml load the YAML parser: the yaml package bundled at build time
  // into one file (lib/yaml.js), which loads in a third of the time of its sixty modules, with
  // the code its first parse compiled (code-cache.ts).
  const { parseDocument, LineCounter, isAlias, isMap, isSeq, isScalar } = requireCached(YAML_PARSER) as YamlModule;
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  keepCompiled(YAML_PARSER);
  const fail = (message: string, offset?: number): never => {
    const at = offset === undefined ? '' : `:${lines.linePos(offset).line}`;
    throw new ConfigError(`${file}${at}: ${message}`);
  };
  if (doc.errors.length > 0) {
    const [error] = doc.errors;
    fail(error.message.split('\n')[0], error.pos[0]);
  }
  const root = doc.contents;
  if (root === null) return { file, envs: [] };
  if (!isMap(root)) fail('expected a mapping at the top level', root.range?.[0]);

  const config: FuncYaml = { file, envs: [] };
  const functionName = doc.getIn(['name']);
  if (functionName !== undefined && functionName !== null) config.name = String(functionName);
  const invoke = doc.getIn(['invoke']);
  if (typeof invoke === 'string') config.invoke = invoke;
  const logLevel = doc.getIn(['logLevel'], true) as { value?: unknown; range?: number[] } | undefined;
  if (logLevel !== undefined && logLevel !== null && logLevel.value !== null) {
    try {
      config.logLevel = parseLogLevel(String(logLevel.value));
    } catch (err) {
      fail(`logLevel: ${(err as Error).message}`, logLevel.range?.[0]);
    }
  }

  const envs = doc.getIn(['run', 'envs'], true);
  if (envs != null && !(isScalar(envs) && envs.value === null)) {
    if (!isSeq(envs)) fail('run.envs must be a list of { name, value }', (envs as { range?: number[] }).range?.[0]);
    const seen = new Map<string, number>();
    // An alias (`*name`) stands for the node it names, as in func's YAML reader.
    const resolved = (node: unknown): unknown => (isAlias(node) ? node.resolve(doc) : node);
    for (const item of (envs as import('yaml').YAMLSeq).items.map(resolved)) {
      const at = (item as { range?: number[] }).range?.[0];
      if (!isMap(item)) fail('each run.envs entry must be a mapping with name and value', at);
      let range: number[] | undefined;
      const text = (key: string): string | undefined => {
        const node = resolved((item as import('yaml').YAMLMap).get(key, true));
        range = (node as { range?: number[] } | null | undefined)?.range;
        if (node === undefined || node === null) return undefined;
        if (!isScalar(node)) return fail(`run.envs ${key} must be text, not a list or mapping`, (node as { range?: number[] }).range?.[0]);
        // As func's YAML reader gives it: a number or a boolean as written (`1.0`, not `1`); null is no value.
        if (node.value === null || node.value === undefined) return undefined;
        return typeof node.value === 'string' ? node.value : (node.source ?? String(node.value));
      };
      const name = text('name');
      const value = text('value');
      const valueRange = range;
      const problem = envProblem(name, value);
      if (problem !== undefined) fail(problem, at);
      if (name !== undefined) {
        const first = seen.get(name);
        if (first !== undefined) fail(`run.envs names ${name} twice (first on line ${first})`, at);
        seen.set(name, lines.linePos(at ?? 0).line);
      }
      config.envs.push(name === undefined ? { value: value! } : { name, value: value! });
      places.push(placeOf(source, value!, valueRange));
    }
  }
  for (const probe of ['liveness', 'readiness'] as const) {
    const node = doc.getIn(['deploy', 'healthEndpoints', probe], true) as { value?: unknown; range?: number[] } | undefined;
    if (node === undefined || node === null || node.value === null) continue;
    const problem = typeof node.value === 'string' ? pathProblem(node.value) : "expected a path starting with '/'";
    if (problem !== undefined) fail(`deploy.healthEndpoints.${probe} must be a path: ${problem}`, node.range?.[0]);
    config[probe] = node.value as string;
  }
  return config;
}

// Knative func's reference syntax (pkg/functions/function.go), with Go's \s: space, \t, \n, \f, \r.
const LOCAL_ENV = /^\{\{[ \t\n\f\r]*env:(\w+)[ \t\n\f\r]*\}\}$/;
const KEY_FROM = /^\{\{[ \t\n\f\r]*(?:secret|configMap):(?:\w|['-]\w)+:[-._a-zA-Z0-9]+[ \t\n\f\r]*\}\}$/;
const WHOLE = /^\{\{[ \t\n\f\r]*(?:secret|configMap):(?:\w|['-]\w)+[ \t\n\f\r]*\}\}$/;
// Kubernetes' rule for a variable's name (IsEnvVarName), which func applies.
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** Whether `name` is a variable name Kubernetes and func accept. */
export function isEnvName(name: string): boolean {
  return ENV_NAME.test(name) && !name.startsWith('..') && name !== '.';
}

/**
 * Why Knative func refuses a run.envs entry (its ValidateEnvs), or undefined when it takes it.
 * `{{` starts a reference: a named entry takes `{{ env:NAME }}`, `{{ secret:NAME:KEY }}` or
 * `{{ configMap:NAME:KEY }}`; an entry without a name only `{{ secret:NAME }}` or `{{ configMap:NAME }}`.
 */
export function envProblem(name: string | undefined, value: string | undefined): string | undefined {
  if (name === undefined) {
    if (value === undefined) return 'a run.envs entry needs a name and a value, or a value alone that imports a secret or config map';
    if (!WHOLE.test(value))
      return "a run.envs entry without a name imports every key of a secret or config map: its value must be '{{ secret:NAME }}' or '{{ configMap:NAME }}'";
    return undefined;
  }
  if (!isEnvName(name)) return `invalid variable name '${quote(name)}' in run.envs: letters, digits, '_', '-' and '.', not starting with a digit`;
  if (value === undefined) return `run.envs entry ${name} needs a value ('' for an empty one)`;
  if (value.startsWith('{{') && !LOCAL_ENV.test(value) && !KEY_FROM.test(value)) {
    return `the value of run.envs entry ${name} starts with '{{': it must be '{{ env:NAME }}', '{{ secret:NAME:KEY }}' or '{{ configMap:NAME:KEY }}'`;
  }
  return undefined;
}

/** At most a few dozen characters of a value that came from a file, for a message. */
function quote(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}...` : text;
}

/** The run.envs entries funcrun did not set, and why. */
export interface SkippedEnvs {
  /** Secret and config map references: resolved by the platform at deploy time. */
  platform: EnvEntry[];
  /** `{{ env:NAME }}` entries whose NAME is not set here. */
  unresolved: EnvEntry[];
}

/**
 * Puts func.yaml's `run.envs` into `env` where a variable is not already set. A value
 * `{{ env:NAME }}` takes NAME from `env`, as `func` does; secret and config map references,
 * named or not, are the platform's to resolve: they are returned, not applied.
 */
export function applyEnvs(config: FuncYaml, env: NodeJS.ProcessEnv): SkippedEnvs {
  const skipped: SkippedEnvs = { platform: [], unresolved: [] };
  for (const entry of config.envs) {
    const { name, value } = entry;
    const reference = value.startsWith('{{');
    const local = reference ? LOCAL_ENV.exec(value) : null;
    if (name === undefined || (reference && local === null)) skipped.platform.push(entry);
    else if (env[name] !== undefined) continue;
    else if (local === null) env[name] = value;
    else if (env[local[1]] !== undefined) env[name] = env[local[1]];
    else skipped.unresolved.push(entry);
  }
  return skipped;
}

const UNITS: Record<string, number> = { b: 1, kb: 1024, k: 1024, mb: 1024 ** 2, m: 1024 ** 2, gb: 1024 ** 3, g: 1024 ** 3 };

/** A byte count from a number or text such as `1048576`, `512kb`, `2mb` (units of 1024). */
export function parseBytes(value: string | number, what = 'body limit'): number {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value > 0) return value;
  } else {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(b|kb?|mb?|gb?|kib|mib|gib)?\s*$/i.exec(value);
    if (m) {
      const unit = (m[2] ?? 'b').toLowerCase().replace('ib', 'b');
      const bytes = Math.floor(Number(m[1]) * UNITS[unit]);
      if (bytes > 0) return bytes;
    }
  }
  throw new ConfigError(`invalid ${what} '${shownValue(value)}': expected a number of bytes, or with a unit such as 512kb or 2mb`);
}

/** A whole number of at least 1, from text or a number. */
export function parseCount(value: string | number, what: string): number {
  const count = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(count) || count < 1) throw new ConfigError(`invalid ${what} '${shownValue(value)}': expected a whole number of at least 1`);
  return count;
}

/** A port number from text or a number. */
export function parsePort(value: string | number, what: string): number {
  const port = typeof value === 'number' ? value : /^\s*\d+\s*$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`invalid ${what} '${shownValue(value)}': expected a port number from 0 to 65535`);
  }
  return port;
}

/** LISTEN_ADDRESS read: a host (none for `:port`) and a port. */
export interface ListenAddress {
  host?: string;
  port: number;
}

/**
 * `host:port`, `[IPv6]:port` or `:port`, as Go's net.Listen takes them (func writes `[::]:8080`).
 * Anything else stops the start: a port alone (`8080`), an IPv6 address without brackets, no port.
 */
export function parseListenAddress(value: string, what: string): ListenAddress {
  const bad = (why: string) => new ConfigError(`invalid ${what} "${shownValue(value)}": ${why}; expected host:port, [IPv6]:port or :port, such as [::]:8080`);
  const parts = /^(?:\[([^\]]*)\]|([^:[\]]*)):(\d+)$/.exec(value.trim());
  if (parts === null) {
    const trimmed = value.trim();
    if (/^\d+$/.test(trimmed)) throw bad('a port alone has a colon before it (:8080)');
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) throw bad('that is a URL, not an address: give the host and port alone');
    throw bad(
      !trimmed.includes('[') && trimmed.indexOf(':') !== trimmed.lastIndexOf(':') ? 'an IPv6 address goes in brackets ([::1]:8080)' : 'not an address and port',
    );
  }
  const [, v6, name, digits] = parts;
  const port = Number(digits);
  if (port > 65535) throw bad('the port is past 65535');
  // `::`, every address, as func writes it, is not checked: node's IPv6 check costs its first call 15 to 25 ms.
  if (v6 !== undefined) {
    if (v6 !== '::' && !isIPv6(v6)) throw bad(`"${shownValue(v6)}" is not an IPv6 address`);
    return { host: v6, port };
  }
  if (name === '') return { port };
  if (!/^[A-Za-z0-9.-]+$/.test(name) || name.length > 253) throw bad(`"${shownValue(name)}" is not a host name or an IPv4 address`);
  return { host: name, port };
}

/** A switch from text: true, 1, yes, on or false, 0, no, off. */
export function parseSwitch(value: string | boolean, what: string): boolean {
  if (typeof value === 'boolean') return value;
  const text = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on', ''].includes(text)) return true;
  if (['false', '0', 'no', 'off'].includes(text)) return false;
  throw new ConfigError(`invalid ${what} '${shownValue(value)}': expected true or false`);
}

/** A duration in milliseconds from a number (milliseconds) or text such as `500ms`, `10s`, `2m`. */
export function parseDuration(value: string | number, what: string): number {
  let ms = NaN;
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) ms = value;
  const m = typeof value === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(value) : null;
  if (m) ms = Number(m[1]) * (m[2] === 's' ? 1000 : m[2] === 'm' ? 60_000 : 1);
  // A timer longer than 2^31 - 1 ms fires at once (node warns and uses 1 ms): refused, not a 504 for every request.
  if (ms > MAX_TIMER) throw new ConfigError(`invalid ${what} '${shownValue(value)}': at most ${MAX_TIMER} ms (about 24 days)`);
  if (ms >= 0) return ms;
  throw new ConfigError(`invalid ${what} '${shownValue(value)}': expected milliseconds, or a duration such as 10s`);
}

const MAX_TIMER = 2 ** 31 - 1;

export function checkLogLevel(value: string, what: string): LogLevel {
  try {
    return parseLogLevel(value);
  } catch {
    // The level's own message quotes the value whole: shown cut here instead.
    throw new ConfigError(`invalid ${what}: unknown log level '${shownValue(value)}': expected one of fatal, error, warn, info, debug, trace, silent`);
  }
}

/**
 * Why a probe or metrics path cannot work, or undefined: it is matched as it is sent, so it starts
 * with '/', holds only URL path characters (no space, newline or other control), escapes as %XX,
 * and has no segment a router would read as a parameter (`:id`, `*`).
 */
export function pathProblem(value: string): string | undefined {
  if (!value.startsWith('/')) return "expected a path starting with '/'";
  if (!/^(?:[A-Za-z0-9\-._~!$&'()+,;=@/]|%[0-9A-Fa-f]{2}|:)*$/.test(value))
    return "expected a path of URL characters such as /health/ready (no spaces or control characters; '%' only as %XX)";
  if (/\/[:*]/.test(value)) return "expected a literal path: a segment starting with ':' or '*' would be a route parameter";
  // Clients resolve dot segments away and may merge empty ones: a probe there would never be asked.
  if (/\/\.{1,2}(?:\/|$)/.test(value)) return "expected a path without '.' or '..' segments";
  if (value.includes('//')) return "expected a path without empty segments ('//')";
  return undefined;
}
