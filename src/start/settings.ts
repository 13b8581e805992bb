// Every setting funcrun reads, in one table: its start() option, its flags, its environment
// variables, its default, the parser that checks it, and its help line. start(), `serve`'s command
// line and --help, and `funcrun config` (which refuses a value the server would refuse) all read
// it, and a spec checks the options table of docs/options.md against it.
import { parseCompat, type Compat } from './compat';
import {
  checkLogLevel,
  ConfigError,
  parseBytes,
  parseCount,
  parseDuration,
  parseListenAddress,
  parsePort,
  parseSwitch,
  shownValue,
  type ListenAddress,
} from './func-yaml';
import type { LogLevel } from '../log/log';
import { checkPath, checkProbeVariable } from './probe-paths';

type Raw = string | number | boolean;

interface Setting<T> {
  /** Flags, the documented one first (faas-js-runtime's spellings among them). */
  flags?: readonly string[];
  short?: string;
  /** A flag without a value (`--include-raw`). */
  boolean?: boolean;
  /** Variables, the first set one wins (`PORT` before `FUNC_PORT`). */
  env?: readonly string[];
  default: T;
  /** Checks and converts a value from any source; `what` names the source in the error. */
  parse(value: Raw, what: string): T;
  /** The --help line. */
  help: string;
  /** Read by `serve` only: not an option of start(). */
  serveOnly?: boolean;
  /** Set by its variable alone: neither a flag nor an option of start(), which reads it from the environment. */
  variableOnly?: boolean;
  /** start() takes this number as a number alone: the others also as text (`'2mb'`, `'10s'`), as a variable gives them. */
  numberOnly?: boolean;
}

const text = (value: Raw): string => String(value);
const duration = (value: Raw, what: string): number => parseDuration(typeof value === 'boolean' ? String(value) : value, what);
const path = (value: Raw, what: string): string => checkPath(String(value), what);

/** The table. Keys are start()'s option names. */
export const SETTINGS = {
  port: {
    flags: ['--port'],
    short: 'p',
    env: ['PORT', 'FUNC_PORT'],
    default: 8080,
    parse: (v: Raw, w: string) => parsePort(text(v), w),
    help: 'port to listen on (LISTEN_ADDRESS, when set, comes before these variables)',
    numberOnly: true,
  },
  host: {
    flags: ['--host'],
    env: ['FUNC_HOST'],
    default: undefined as string | undefined,
    parse: (v: Raw, w: string) => parseHost(text(v), w),
    help: 'address to listen on, :: for every one (default: every address; LISTEN_ADDRESS, when set, comes before the variable)',
  },
  // Knative func writes LISTEN_ADDRESS=[::]:8080 into the images it builds, and its Go runtime
  // reads it before PORT: see listenPlace().
  listenAddress: {
    env: ['LISTEN_ADDRESS'],
    default: undefined as ListenAddress | undefined,
    parse: (v: Raw, w: string) => parseListenAddress(text(v), w),
    help: 'host and port together, as Knative func sets it: host:port, [IPv6]:port or :port (the port alone)',
    variableOnly: true,
  },
  logLevel: {
    flags: ['--log-level', '--logLevel'],
    env: ['FUNC_LOG_LEVEL'],
    default: 'info' as LogLevel,
    parse: (v: Raw, w: string) => checkLogLevel(text(v), w),
    help: 'fatal, error, warn, info, debug, trace or silent (warn in faas-js-runtime compatibility)',
  },
  bodyLimit: {
    flags: ['--bodyLimit', '--body-limit'],
    env: ['FUNC_BODY_LIMIT'],
    default: 1_048_576,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: 'largest request body, such as 1048576 or 2mb',
  },
  uploadLimit: {
    flags: ['--upload-limit'],
    env: ['FUNC_UPLOAD_LIMIT'],
    default: 104_857_600,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: 'largest multipart/form-data body, or body streamed to a function, such as 100mb',
  },
  fileSizeLimit: {
    env: ['FUNC_FILE_SIZE_LIMIT'],
    default: undefined as number | undefined,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: 'largest uploaded file (default: the upload limit)',
  },
  filesLimit: { env: ['FUNC_FILES_LIMIT'], default: 20, parse: (v: Raw, w: string) => parseCount(text(v), w), help: 'files in one multipart body at most' },
  fieldsLimit: {
    env: ['FUNC_FIELDS_LIMIT'],
    default: 1000,
    parse: (v: Raw, w: string) => parseCount(text(v), w),
    help: 'fields in one multipart body at most',
  },
  fieldSizeLimit: {
    env: ['FUNC_FIELD_SIZE_LIMIT'],
    default: 1_048_576,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: "largest multipart field value (a body's fields, names included, and files' names together are held to it or the body limit, the larger)",
  },
  partHeaderLimit: {
    env: ['FUNC_PART_HEADER_LIMIT'],
    default: 16_384,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: 'largest header of one multipart part',
  },
  fileMemoryLimit: {
    env: ['FUNC_FILE_MEMORY_LIMIT'],
    default: 65_536,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: 'an uploaded file larger than this is written to a temporary file, not held in memory',
  },
  uploadDiskLimit: {
    env: ['FUNC_UPLOAD_DISK_LIMIT'],
    default: 1_073_741_824,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: 'bytes of temporary upload files held at once, across requests; an upload past it is a 503 with Retry-After',
  },
  minBodyRate: {
    env: ['FUNC_MIN_BODY_RATE'],
    default: 8192,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: 'bytes per second a client streaming a body to a function sends at least, past the request timeout, while the function waits',
  },
  includeRaw: {
    flags: ['--include-raw', '--includeRaw'],
    boolean: true,
    env: ['FUNC_INCLUDE_RAW'],
    default: false,
    parse: (v: Raw, w: string) => parseSwitch(typeof v === 'number' ? String(v) : v, w),
    help: 'put the body as it arrived on context.rawBody',
  },
  gracePeriod: {
    flags: ['--grace-period'],
    env: ['FUNC_GRACE_PERIOD'],
    default: 10_000,
    parse: duration,
    help: 'how long requests in flight may take at shutdown, such as 10s',
    serveOnly: true,
  },
  timeout: {
    flags: ['--timeout'],
    env: ['FUNC_TIMEOUT'],
    default: 0,
    parse: duration,
    help: 'answer 504 when the function takes longer, such as 30s (default: off)',
  },
  maxConnections: {
    flags: ['--max-connections'],
    env: ['FUNC_MAX_CONNECTIONS'],
    default: 1024,
    parse: (v: Raw, w: string) => parseCount(text(v), w),
    help: 'open connections at most',
  },
  compat: {
    flags: ['--compat'],
    env: ['FUNC_COMPAT'],
    default: undefined as Compat | undefined,
    parse: (v: Raw, w: string) => parseCompat(text(v), w),
    help: 'faas-js-runtime (behave as it where it and the function contract differ) or none (default: faas-js-runtime when funcrun is installed or started under that name)',
  },
  accessLog: {
    flags: ['--access-log'],
    boolean: true,
    env: ['FUNC_ACCESS_LOG'],
    default: undefined as boolean | undefined,
    parse: (v: Raw, w: string) => parseSwitch(typeof v === 'number' ? String(v) : v, w),
    help: 'log an info line for every answered request (default: on in faas-js-runtime compatibility)',
  },
  maxEventLoopDelay: {
    env: ['FUNC_MAX_EVENT_LOOP_DELAY'],
    default: 1000,
    parse: duration,
    help: 'readiness answers 503 while the event loop runs later than this (0: off)',
  },
  headersTimeout: { env: ['FUNC_HEADERS_TIMEOUT'], default: 20_000, parse: duration, help: 'time a client has to send its headers' },
  requestTimeout: { env: ['FUNC_REQUEST_TIMEOUT'], default: 60_000, parse: duration, help: 'time a client has to send its whole request' },
  keepAliveTimeout: { env: ['FUNC_KEEP_ALIVE_TIMEOUT'], default: 95_000, parse: duration, help: 'how long an idle keep-alive connection stays open' },
  probeTimeout: { env: ['FUNC_PROBE_TIMEOUT'], default: 5_000, parse: duration, help: 'a liveness or readiness check not answered by then fails (503)' },
  metrics: {
    env: ['FUNC_METRICS'],
    default: true,
    parse: (v: Raw, w: string) => parseSwitch(typeof v === 'number' ? String(v) : v, w),
    help: 'serve Prometheus metrics',
  },
  // METRICS_URL: faas-js-runtime's, first, as LIVENESS_URL and READINESS_URL are (probe-paths.ts).
  metricsPath: { env: ['METRICS_URL', 'FUNC_METRICS_PATH'], default: '/metrics', parse: path, help: 'where metrics are served' },
  lightWebGlobals: {
    env: ['FUNC_LIGHT_WEB_GLOBALS'],
    default: false,
    parse: (v: Raw, w: string) => parseSwitch(typeof v === 'number' ? String(v) : v, w),
    help: "a fetch handler's process gets light global Request, Response and fetch, as @hono/node-server installs: a Request made lazily, a Response of text written directly",
  },
  idempotency: {
    env: ['FUNC_IDEMPOTENCY'],
    default: undefined as boolean | undefined,
    parse: (v: Raw, w: string) => parseSwitch(typeof v === 'number' ? String(v) : v, w),
    help: "run each CloudEvent once: a duplicate gets the first delivery's answer (default: the module's events.idempotency)",
  },
  idempotencyStore: {
    env: ['FUNC_IDEMPOTENCY_STORE'],
    default: 'memory',
    parse: (v: Raw, w: string) => parseStore(text(v), w),
    help: 'where claims and answers are kept: memory (this process), or a redis:// or rediss:// URL shared by every replica',
  },
  idempotencyWindow: { env: ['FUNC_IDEMPOTENCY_WINDOW'], default: 3_600_000, parse: duration, help: "how long a duplicate gets the first delivery's answer" },
  idempotencyClaim: {
    env: ['FUNC_IDEMPOTENCY_CLAIM'],
    default: 0,
    parse: duration,
    help: "how long a running delivery's claim holds if its replica dies (default: the timeout and a second, else 5 minutes)",
  },
  idempotencyEntries: {
    env: ['FUNC_IDEMPOTENCY_ENTRIES'],
    default: 10_000,
    parse: (v: Raw, w: string) => parseCount(text(v), w),
    help: 'events the memory store keeps at most',
  },
  idempotencyBytes: {
    env: ['FUNC_IDEMPOTENCY_BYTES'],
    default: 67_108_864,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: 'bytes of answers the memory store keeps at most',
  },
  idempotencyAnswerLimit: {
    env: ['FUNC_IDEMPOTENCY_ANSWER_LIMIT'],
    default: 262_144,
    parse: (v: Raw, w: string) => parseBytes(typeof v === 'boolean' ? String(v) : v, w),
    help: 'largest answer kept for duplicates; a larger one is sent, not kept',
  },
  idempotencyKeyLimit: {
    env: ['FUNC_IDEMPOTENCY_KEY_LIMIT'],
    default: 1024,
    parse: (v: Raw, w: string) => parseCount(text(v), w),
    help: "longest event key (source and id, or the module's key), in characters",
  },
  pretty: {
    flags: ['--pretty'],
    boolean: true,
    env: ['FUNC_LOG_PRETTY'],
    default: false,
    parse: (v: Raw, w: string) => parseSwitch(typeof v === 'number' ? String(v) : v, w),
    help: 'human-readable log lines instead of JSON',
    serveOnly: true,
  },
} satisfies Record<string, Setting<unknown>>;

export type SettingName = keyof typeof SETTINGS;
export type Values = { -readonly [K in SettingName]: ReturnType<(typeof SETTINGS)[K]['parse']> };

/** The settings that are options of start() (not `serve`'s own, nor those a variable alone sets). */
export type StartOptionName = {
  [K in SettingName]: (typeof SETTINGS)[K] extends { serveOnly: true } | { variableOnly: true } ? never : K;
}[SettingName];

/**
 * The type start() takes each option as, by the table: its parser's value, and text too for a
 * number (a size, a duration, a count) unless the entry says `numberOnly`. index.ts's `Options`
 * must agree with it: `resolve` takes nothing else, and spec/options-type.spec.js compares them.
 */
export type OptionTypes = {
  [K in StartOptionName]: Values[K] extends number ? ((typeof SETTINGS)[K] extends { numberOnly: true } ? number : number | string) : Values[K];
};

/** The values the environment sets, parsed and checked, each under its setting's name. */
export function fromEnvironment(env: NodeJS.ProcessEnv): Partial<Values> {
  const out: Partial<Record<SettingName, unknown>> = {};
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const setting: Setting<unknown> = SETTINGS[name];
    const variable = setting.env?.find((v) => env[v] !== undefined && env[v] !== '');
    if (variable !== undefined) out[name] = setting.parse(env[variable]!, variable);
  }
  return out as Partial<Values>;
}

/**
 * A setting's value: start()'s option, else the environment's, else `fallback` (the module's own
 * `logLevel`), else the default. An option arrives as text or as a value; both are checked.
 */
export function resolve<K extends StartOptionName>(name: K, option: Partial<OptionTypes>[K], env: Partial<Values>, fallback?: Values[K]): Values[K] {
  const setting: Setting<unknown> = SETTINGS[name];
  if (option !== undefined) return setting.parse(option as Raw, name) as Values[K];
  if (env[name] !== undefined) return env[name] as Values[K];
  return (fallback === undefined ? setting.default : setting.parse(fallback as Raw, name)) as Values[K];
}

/**
 * Where the server listens, each part on its own: start()'s option (serve's flag), then
 * LISTEN_ADDRESS's part, then PORT, FUNC_PORT or FUNC_HOST, then the default. LISTEN_ADDRESS comes
 * before the others as Knative func's Go runtime reads it (func-go's listenAddress()). A host of
 * `::` is left to node, which listens on every address of both families then, and on IPv4's
 * alone where the machine has no IPv6, as Go does with `[::]:8080`; naming it would fail there.
 */
export function listenPlace(
  options: Partial<Pick<OptionTypes, 'port' | 'host'>>,
  env: Partial<Values>,
  variables: NodeJS.ProcessEnv = {},
): { port: number; host: string | undefined; portFrom?: string; hostFrom?: string } {
  const listen = env.listenAddress;
  const port = resolve('port', options.port, { port: listen?.port ?? env.port });
  const host = resolve('host', options.host, { host: listen?.host ?? env.host });
  // Where each part came from, for a start error (undefined: the default): a flag, or the variable set.
  const portFrom =
    options.port !== undefined ? '--port' : listen !== undefined ? 'LISTEN_ADDRESS' : env.port !== undefined ? variableOf('port', variables) : undefined;
  const hostFrom =
    options.host !== undefined ? '--host' : listen?.host !== undefined ? 'LISTEN_ADDRESS' : env.host !== undefined ? variableOf('host', variables) : undefined;
  return { port, host: host === '::' ? undefined : host, portFrom, hostFrom };
}

/** The variable that set `name` in `variables`: the first of its setting's that is set. */
function variableOf(name: SettingName, variables: NodeJS.ProcessEnv): string | undefined {
  const setting: Setting<unknown> = SETTINGS[name];
  return setting.env?.find((v) => variables[v] !== undefined && variables[v] !== '');
}

/** A host: any text a resolver may take, but no longer than a host name can be (a start error echoes it). */
function parseHost(value: string, what: string): string {
  if (value.length > 253) throw new ConfigError(`invalid ${what} "${shownValue(value)}": longer than a host name can be (253 characters)`);
  return value;
}

/** Refuses a variable's value that funcrun would refuse at start (`funcrun config envs add`). */
export function checkVariable(name: string, value: string): void {
  // An empty value is no value (start treats it as unset); a `{{ env:NAME }}` or `{{ secret:... }}`
  // reference is resolved from elsewhere, by func.yaml's rules, and checked when it is.
  if (value === '' || /^\{\{[^}]*\}\}$/.test(value.trim())) return;
  if (checkProbeVariable(name, value)) return;
  for (const setting of Object.values(SETTINGS) as Setting<unknown>[]) {
    if (setting.env?.includes(name)) setting.parse(value, name);
  }
}

/** `serve`'s flags, for node:util's parseArgs. */
export function flagOptions(): Record<string, { type: 'string' | 'boolean'; short?: string }> {
  const out: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const setting of Object.values(SETTINGS) as Setting<unknown>[]) {
    for (const [i, flag] of (setting.flags ?? []).entries()) {
      out[flag.slice(2)] = { type: setting.boolean ? 'boolean' : 'string', ...(i === 0 && setting.short ? { short: setting.short } : {}) };
    }
  }
  return out;
}

/** The values the command line gives (parseArgs' `values`), parsed and checked. */
export function fromFlags(values: Record<string, string | boolean | undefined>): Partial<Values> {
  const out: Partial<Record<SettingName, unknown>> = {};
  for (const name of Object.keys(SETTINGS) as SettingName[]) {
    const setting: Setting<unknown> = SETTINGS[name];
    const flag = setting.flags?.find((f) => values[f.slice(2)] !== undefined);
    if (flag !== undefined) out[name] = setting.parse(values[flag.slice(2)]!, flag);
  }
  return out as Partial<Values>;
}

/** A default as the docs write it: a duration in its largest whole unit (`10s`, not 10000). */
function shownDefault(setting: Setting<unknown>): string {
  const value = setting.default;
  if (setting.parse !== duration || typeof value !== 'number' || value <= 0) return String(value);
  for (const [unit, ms] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const)
    if (value % ms === 0) return `${value / ms}${unit}`;
  return `${value}ms`;
}

/** The options part of --help, one line per flag, from the table. */
export function flagHelp(): string {
  const lines: string[] = [];
  for (const setting of Object.values(SETTINGS) as Setting<unknown>[]) {
    if (setting.flags === undefined) continue;
    const [flag, ...others] = setting.flags;
    const names = `${setting.short ? `-${setting.short}, ` : '    '}${flag}${setting.boolean ? '' : ' <value>'}`;
    const variables = setting.env?.length ? setting.env.join(', ') : '';
    const fallback = setting.default === undefined || setting.default === false ? '' : `, else ${shownDefault(setting)}`;
    const also = others.length ? ` (also ${others.join(', ')})` : '';
    lines.push(`  ${names.padEnd(27)} ${setting.help}${also}${variables ? ` [${variables}${fallback}]` : ''}`);
  }
  return lines.join('\n');
}

/**
 * The settings without a flag, by the names a flag for them would have (`uploadlimit`, lowercase
 * and without dashes), each with the variable that sets it: for `--file-size-limit`, the answer
 * is the variable rather than a nearest flag.
 */
export function variableOnlySettings(): Map<string, { name: string; variable: string }> {
  const found = new Map<string, { name: string; variable: string }>();
  for (const [name, setting] of Object.entries(SETTINGS) as [string, Setting<unknown>][]) {
    if (setting.flags === undefined && setting.env !== undefined) found.set(name.toLowerCase(), { name, variable: setting.env[0] });
  }
  return found;
}

// A store URL may hold a password: an error names the variable, never the value.
function parseStore(value: string, what: string): string {
  if (value === 'memory' || /^rediss?:\/\/./.test(value)) return value;
  throw new ConfigError(`invalid ${what}: expected memory, or a redis:// or rediss:// URL`);
}
