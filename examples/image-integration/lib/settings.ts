// Every environment variable the service reads, in one table: the variables of each setting, its
// default (written once, as the variable would be written), the parser that checks it, and its
// line in the README's Configuration table, which a spec (spec/settings.spec.js) checks against
// this one, both ways. Only index.ts reads the environment, and hands it to readSettings; nothing
// here reads it by itself.
import { readFileSync } from 'node:fs';
import { parseBytes, parseCount, parseDuration, parseSwitch } from 'funcrun';
import { ECR_REGISTRY_TEMPLATE, regionalEndpoint } from './ecr';
import { ALLOW_PRIVATE_SETTING } from './endpoint';
import { CONTAINER_ANALYSIS_ENDPOINT, GOOGLE_TOKEN_ENDPOINT } from './google';

/** The environment, as the entry point hands it over. */
export type Environment = Readonly<Record<string, string | undefined>>;

interface Setting<T> {
  /** The variables it reads, as the README's row names them. */
  variables: readonly string[];
  /** The value when unset, as it would be written (`5s`), given to the parser; undefined: none. */
  default?: string;
  /** What applies when unset and there is no default value, in the README's words. */
  unset?: string;
  /** The setting's value from the environment; an invalid value throws, naming its variable. */
  read(env: Environment): T;
  /** The README's line for it (the Configuration table's third column). */
  doc: string;
}

interface OneVariable<T> {
  parse: (value: string, name: string) => T;
  doc: string;
}

/** A setting of one variable with a default: its value, else the default, through `parse`. */
function variable<T>(name: string, { default: fallback, parse, doc }: OneVariable<T> & { default: string }): Setting<T> {
  return { variables: [name], default: fallback, doc, read: (env) => parse(env[name] ?? fallback, name) };
}

/** A setting of one variable without a default value (`unset` says what applies then): its value through `parse`, else undefined. */
function optional<T>(name: string, { unset, parse, doc }: OneVariable<T> & { unset: string }): Setting<T | undefined> {
  return {
    variables: [name],
    unset,
    doc,
    read(env) {
      const value = env[name];
      return value === undefined ? undefined : parse(value, name);
    },
  };
}

// Parsers. An empty value of an optional setting is no value, as if unset.
const duration = (value: string, name: string) => parseDuration(value, name);
const bytes = (value: string, name: string) => parseBytes(value, name);
const count = (value: string, name: string) => parseCount(value, name);
const flag = (value: string, name: string) => parseSwitch(value, name);
const optionalText = (value: string) => value || undefined;
const optionalDuration = (value: string, name: string) => (value ? parseDuration(value, name) : undefined);
const serverList = (value: string) =>
  value
    ? value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;
// The CA file is read when the setting is, so that a missing file stops the start in its turn.
const caFile = (value: string) => (value ? [readFileSync(value, 'utf8')] : undefined);

const AWS_VARIABLES = ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN'] as const;

/**
 * Proxy variables: those StackRox's clients read (Go's http.ProxyFromEnvironment), grpc-js's, curl's
 * ALL_PROXY and node's NODE_USE_ENV_PROXY. This service uses none of them, on any path, and says
 * so at start.
 */
const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy', 'grpc_proxy', 'NODE_USE_ENV_PROXY'] as const;

const inUrl = (text: string) => `\`${text}\``;

/** The table, in the order the settings are read (the first invalid one stops the start). Keys are the service's option names. */
export const SETTINGS = {
  connectTimeout: variable('IMAGE_INTEGRATION_CONNECT_TIMEOUT', { default: '5s', parse: duration, doc: 'TCP (and TLS) connect, per request' }),
  responseTimeout: variable('IMAGE_INTEGRATION_RESPONSE_TIMEOUT', { default: '10s', parse: duration, doc: 'from connected to response headers, per request' }),
  maxResponseBytes: variable('IMAGE_INTEGRATION_MAX_RESPONSE_BYTES', {
    default: '64kb',
    parse: bytes,
    doc: "how much of a peer's answer is read; the rest is cut. The gRPC Ping reads a message of at most this size (gRPC's own default is 4 MiB), and refuses a larger one at its header",
  }),
  resolveTimeout: optional('IMAGE_INTEGRATION_RESOLVE_TIMEOUT', {
    unset: 'the connect timeout',
    parse: optionalDuration,
    doc: 'how long resolving a name may take, waiting for a turn included; what has arrived by then is used (A without AAAA, or the reverse)',
  }),
  dnsServers: optional('IMAGE_INTEGRATION_DNS_SERVERS', {
    unset: "the system's",
    parse: serverList,
    doc: 'DNS servers (`ip` or `ip:port`, comma-separated) for the bounded resolver',
  }),
  allowPrivate: variable(ALLOW_PRIVATE_SETTING, {
    default: 'false',
    parse: flag,
    doc: 'allow loopback and unspecified addresses (never link-local or metadata)',
  }),
  ca: optional('IMAGE_INTEGRATION_CA_FILE', { unset: 'unset', parse: caFile, doc: "PEM certificates trusted besides the system's" }),
  testTimeout: variable('IMAGE_INTEGRATION_TEST_TIMEOUT', { default: '30s', parse: duration, doc: 'one whole test, all requests included' }),
  maxConcurrentTests: variable('IMAGE_INTEGRATION_MAX_CONCURRENT_TESTS', {
    default: '32',
    parse: count,
    doc: 'tests running at once; past it a request is answered 429 (`RESOURCE_EXHAUSTED`, code 8) with `Retry-After: 1`. A test whose caller went away is stopped and frees its slot',
  }),
  apiToken: optional('IMAGE_INTEGRATION_API_TOKEN', {
    unset: 'unset (open, with a warning)',
    parse: optionalText,
    doc: 'bearer token required on every request',
  }),
  maxRequestBytes: variable('IMAGE_INTEGRATION_MAX_REQUEST_BYTES', {
    default: '1mb',
    parse: bytes,
    doc: "the largest request body; past it (by its `Content-Length`, or as it is read) a 429 (`RESOURCE_EXHAUSTED`, code 8). The service reads its body itself, so funcrun's `bodyLimit` does not apply; its `uploadLimit` (100 MiB) must stay above this",
  }),
  ecrEndpoint: optional('IMAGE_INTEGRATION_ECR_API_ENDPOINT', {
    unset: inUrl(regionalEndpoint('ecr', '<region>')),
    parse: optionalText,
    doc: "ECR API base URL (VPC endpoints, tests); an integration's `endpoint` wins",
  }),
  stsEndpoint: optional('IMAGE_INTEGRATION_STS_ENDPOINT', { unset: inUrl(regionalEndpoint('sts', '<region>')), parse: optionalText, doc: 'STS base URL' }),
  registryEndpoint: optional('IMAGE_INTEGRATION_ECR_REGISTRY_ENDPOINT', {
    unset: inUrl(ECR_REGISTRY_TEMPLATE),
    parse: optionalText,
    doc: "the registry an ECR login is tested against (another AWS partition's domain, tests)",
  }),
  allowIam: variable('IMAGE_INTEGRATION_ALLOW_ECR_IAM', {
    default: 'false',
    parse: flag,
    doc: "allow ECR's `useIam`: a test with this service's own AWS identity (`AWS_ACCESS_KEY_ID`...). Its calls go only to AWS's ECR API (or `IMAGE_INTEGRATION_ECR_API_ENDPOINT`), never to a caller's `endpoint`, and the token goes only to `<registryId>.dkr.ecr.<region>.amazonaws.com`, so a caller cannot borrow the service's identity or pull access",
  }),
  allowAssumeRole: variable('IMAGE_INTEGRATION_ALLOW_ECR_ASSUME_ROLE', {
    default: 'false',
    parse: flag,
    doc: "allow ECR's `useAssumeRole` (a role the caller names)",
  }),
  ownCredentials: {
    variables: AWS_VARIABLES,
    unset: 'unset',
    doc: "this service's own AWS credentials, for `useIam`",
    // Both keys, or none; the session token only beside them.
    read: (env: Environment) =>
      env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
        ? { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN || undefined }
        : undefined,
  },
  googleTokenEndpoint: optional('IMAGE_INTEGRATION_GOOGLE_TOKEN_ENDPOINT', {
    unset: inUrl(GOOGLE_TOKEN_ENDPOINT),
    parse: optionalText,
    doc: "Google's OAuth token endpoint (the Google scanner's test)",
  }),
  containerAnalysisEndpoint: optional('IMAGE_INTEGRATION_CONTAINER_ANALYSIS_ENDPOINT', {
    unset: inUrl(CONTAINER_ANALYSIS_ENDPOINT),
    parse: optionalText,
    doc: 'Container Analysis base URL',
  }),
  proxyVariables: {
    variables: PROXY_VARIABLES,
    unset: 'unset',
    doc: "not used by any path; set, the start logs a warning (see [Where the tests differ from StackRox's](#where-the-tests-differ-from-stackroxs))",
    // The names of those set, for the warning.
    read: (env: Environment): string[] => PROXY_VARIABLES.filter((name) => env[name]),
  },
} satisfies Record<string, Setting<unknown>>;

export type SettingName = keyof typeof SETTINGS;
export type Settings = { [K in SettingName]: ReturnType<(typeof SETTINGS)[K]['read']> };

/** Every setting's value from `env`, read in the table's order; an invalid value throws, naming its variable. */
export function readSettings(env: Environment): Settings {
  const out: Partial<Record<SettingName, unknown>> = {};
  for (const name of Object.keys(SETTINGS) as SettingName[]) out[name] = SETTINGS[name].read(env);
  return out as Settings;
}
