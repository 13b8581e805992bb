// Validation before any network call: the body decoded as StackRox decodes it (request-decode.ts:
// protojson with unknown fields ignored), then every problem at once, each with its field.
import { CONFIG_NAMES, schema, secretPaths, updateSchema, type Category, type ConfigName } from './schema';
import { parseEndpoint, parseHostPort, refusedByUrlParse, splitHostPort } from './endpoint';
import type { FieldViolation } from './grpc';
import { decodeMessage, nearMisses, quoteName, type Decoded } from './request-decode';
import { fromParsed, parseRequestJson, RequestSyntaxError, type JsonNode } from './request-json';

/** The integration types, the configs each may carry, and the categories each may test. */
export const TYPES: Record<string, { configs: ConfigName[]; categories: Category[] }> = {
  docker: { configs: ['docker'], categories: ['REGISTRY'] },
  artifactory: { configs: ['docker'], categories: ['REGISTRY'] },
  nexus: { configs: ['docker'], categories: ['REGISTRY'] },
  rhel: { configs: ['docker'], categories: ['REGISTRY'] },
  ghcr: { configs: ['docker'], categories: ['REGISTRY'] },
  quay: { configs: ['quay'], categories: ['REGISTRY', 'SCANNER'] },
  ecr: { configs: ['ecr'], categories: ['REGISTRY'] },
  google: { configs: ['google'], categories: ['REGISTRY', 'SCANNER'] },
  artifactregistry: { configs: ['google'], categories: ['REGISTRY'] },
  azure: { configs: ['azure', 'docker'], categories: ['REGISTRY'] },
  ibm: { configs: ['ibm'], categories: ['REGISTRY'] },
  clairify: { configs: ['clairify'], categories: ['SCANNER', 'NODE_SCANNER'] },
  scannerv4: { configs: ['scannerV4'], categories: ['SCANNER', 'NODE_SCANNER'] },
  clair: { configs: ['clair'], categories: ['SCANNER'] },
  clairV4: { configs: ['clairV4'], categories: ['SCANNER'] },
};

/** At most this many violations are reported (one more entry says how many were left out). */
export const MAX_VIOLATIONS = 20;

type Config = Record<string, unknown>;

/** A request that passed validation. */
export interface Integration {
  name: string;
  type: string;
  categories: Category[];
  configName: ConfigName;
  config: Config;
  /** Parsed endpoints, by field path (`docker.endpoint`). */
  endpoints: Record<string, URL>;
}

/** What was read from the body, valid or not: for logging and redaction. */
export interface Request {
  /** The ImageIntegration as decoded (for /test/updated, its `config`). */
  integration: Record<string, unknown>;
  /** `updatePassword` of an UpdateImageIntegrationRequest. */
  updatePassword: boolean;
  /** The ignored field names (paths, each name cut to 40 characters), at most 20. */
  ignored: string[];
  /** The strings inside ignored fields: never shown, redacted from every output. */
  ignoredStrings: string[];
}

export type Validation = (
  | { ok: true; integration: Integration }
  | {
      ok: false;
      violations: FieldViolation[];
      /**
       * Some violation is one StackRox finds before it looks the integration's id up: grpc-gateway's
       * decoding, or validateIntegration's own rules (a name, a category, an endpoint Go's url.Parse
       * refuses). The others are its registry and scanner factories', which come after the lookup.
       */
      beforeLookup: boolean;
    }
) & {
  request: Request;
  /** The endpoints that parsed, by field path (`docker.endpoint`), valid request or not. */
  endpoints: Record<string, URL>;
};

export interface ValidateOptions {
  /** The body's text, when known: then duplicate keys are seen (JSON.parse hides them). */
  text?: string;
  /** The body is an UpdateImageIntegrationRequest (POST /test/updated). */
  update?: boolean;
}

const SECRET_FIELDS = new Set(secretPaths().map((p) => p.join('.')));

/** True for the path of a secret field (`docker.password`), with or without the `config.` of /test/updated. */
export function isSecretField(field: string): boolean {
  return SECRET_FIELDS.has(field.replace(/^config\./, ''));
}

/** The validator; the function it returns validates one request body (parsed, or as text in `options`). */
export function createValidator(): (body: unknown, options?: ValidateOptions) => Validation {
  return (body, options = {}) => {
    const update = options.update === true;
    const empty: Request = { integration: {}, updatePassword: false, ignored: [], ignoredStrings: [] };
    let tree: JsonNode;
    try {
      tree = options.text !== undefined ? parseRequestJson(options.text) : fromParsed(body);
    } catch (err) {
      if (!(err instanceof RequestSyntaxError)) throw err;
      return { ok: false, violations: [{ field: '(body)', description: err.message }], beforeLookup: true, request: empty, endpoints: {} };
    }
    if (tree.kind !== 'object') {
      return { ok: false, violations: [{ field: '(body)', description: 'must be a JSON object' }], beforeLookup: true, request: empty, endpoints: {} };
    }
    const decoded = decodeMessage(tree, update ? updateSchema : schema);
    const prefix = update ? 'config.' : '';
    const value = update ? ((decoded.value.config as Record<string, unknown> | undefined) ?? {}) : decoded.value;
    const request: Request = {
      integration: value,
      updatePassword: decoded.value.updatePassword === true,
      ignored: [...decoded.ignored].flatMap(([path, names]) => names.map((name) => (path ? `${path}.${quoteName(name)}` : quoteName(name)))).slice(0, 20),
      ignoredStrings: decoded.ignoredStrings,
    };

    // One violation per field: the first problem found with it. `early`: one StackRox finds before
    // it looks the id up (service_impl.go TestUpdatedImageIntegration: grpc-gateway decodes the
    // body, validateIntegration checks it, reconcileUpdateImageIntegrationRequest looks the id up,
    // then the registry and scanner factories check their configurations).
    const violations: FieldViolation[] = [];
    const bad = new Set<string>();
    let beforeLookup = false;
    const add = (field: string, description: string, early = false) => {
      if (bad.has(field)) return;
      bad.add(field);
      beforeLookup ||= early;
      violations.push({ field, description: description + nearMissNote(decoded, field, description) });
    };
    for (const v of decoded.violations) add(v.field, v.description, true);
    const at = (field: string) => prefix + field;
    if (update && decoded.value.config === undefined && !bad.has('config')) add('config', 'is required: the ImageIntegration to test', true);

    // validateIntegration (central/imageintegration/service/service_impl.go): `request.GetName() == ""`,
    // so a name of spaces is a name, and is tested.
    const name = value.name;
    if (typeof name !== 'string' || name === '') add(at('name'), 'is required', true);

    const categories = Array.isArray(value.categories) ? (value.categories as Category[]) : [];
    if (categories.length === 0 && !violations.some((v) => v.field.startsWith(at('categories'))))
      add(at('categories'), 'at least one category is required', true);

    const present = CONFIG_NAMES.filter((config) => value[config] !== undefined);
    if (present.length === 0 && !CONFIG_NAMES.some((c) => bad.has(at(c)))) add(at('(config)'), `exactly one of ${CONFIG_NAMES.join(', ')} is required`);

    const type = value.type;
    const kind = typeof type === 'string' && Object.hasOwn(TYPES, type) ? TYPES[type] : undefined;
    if (typeof type !== 'string' || type === '') add(at('type'), 'is required');
    else if (kind === undefined) add(at('type'), `unknown type '${quoteName(type)}': expected one of ${Object.keys(TYPES).join(', ')}`);

    const configName = present[0];
    if (kind !== undefined && present.length === 1 && !kind.configs.includes(configName)) {
      add(at(configName), `a '${String(type)}' integration takes ${kind.configs.join(' or ')}, not ${configName}`);
    }
    if (kind !== undefined && Array.isArray(value.categories)) {
      categories.forEach((category, i) => {
        if (!kind.categories.includes(category))
          add(at(`categories[${i}]`), `a '${String(type)}' integration cannot be ${category}; it can be ${kind.categories.join(' or ')}`);
      });
    }

    const endpoints: Record<string, URL> = {};
    if (present.length === 1 && !bad.has(at(configName)) && isObject(value[configName])) {
      requireFields(
        { configName, type: String(type), categories },
        value[configName] as Config,
        (field, description, early) => add(at(field), description, early),
        endpoints,
      );
    }
    if (violations.length > 0) return { ok: false, violations: capped(violations), beforeLookup, request, endpoints };
    return {
      ok: true,
      integration: {
        name: name as string,
        type: type as string,
        categories: [...new Set(categories)],
        configName,
        config: testedConfig(configName, value[configName] as Config),
        endpoints,
      },
      request,
      endpoints,
    };
  };
}

function capped(violations: FieldViolation[]): FieldViolation[] {
  if (violations.length <= MAX_VIOLATIONS) return violations;
  return [...violations.slice(0, MAX_VIOLATIONS), { field: '(more)', description: `${violations.length - MAX_VIOLATIONS} more violations not shown` }];
}

// `; the unknown field 'pasword' was ignored` when a required field is missing and the object
// that should hold it had an ignored field whose name is a near-miss of it.
function nearMissNote(decoded: Decoded, field: string, description: string): string {
  if (!description.startsWith('is required') && !description.startsWith('exactly one of')) return '';
  const dot = field.lastIndexOf('.');
  const parent = dot === -1 ? '' : field.slice(0, dot);
  const last = field.slice(dot + 1);
  let wanted: string[];
  if (last === '(config)') wanted = CONFIG_NAMES.flatMap((name) => [name, name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)]);
  else wanted = [last, last.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];
  const misses = nearMisses(decoded.ignored.get(parent), wanted);
  if (misses.length === 0) {
    // A whole UpdateImageIntegrationRequest posted to /test: say where it belongs.
    if (parent === '' && last === '(config)' && decoded.ignored.get('')?.includes('config')) {
      return "; the unknown field 'config' was ignored: an UpdateImageIntegrationRequest ({config, updatePassword}) goes to POST /v1/imageintegrations/test/updated";
    }
    return '';
  }
  const quoted = misses.map((m) => `'${quoteName(m)}'`).join(', ');
  return misses.length === 1 ? `; the unknown field ${quoted} was ignored` : `; the unknown fields ${quoted} were ignored`;
}

function isObject(value: unknown): value is Config {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const filled = (value: unknown): boolean => typeof value === 'string' && value.trim() !== '';

// Each config's own rules. Fields with a decoding violation are already reported (and absent here).
function requireFields(
  { configName, type, categories }: { configName: ConfigName; type: string; categories: Category[] },
  config: Config,
  add: (field: string, description: string, early?: boolean) => void,
  endpoints: Record<string, URL>,
): void {
  const at = (field: string) => `${configName}.${field}`;
  const need = (field: string, why = 'is required') => {
    if (!filled(config[field])) add(at(field), why);
  };
  const endpoint = (field: string, options: { required?: boolean } = {}) => {
    const value = config[field];
    if (!filled(value)) {
      if (options.required !== false) add(at(field), 'is required');
      return;
    }
    const parsed = parseEndpoint(value as string);
    // What Go's url.Parse refuses too is refused by validateIntegration (pkg/endpoints
    // ValidateEndpoints), before the id is looked up; the rest by the factories, after it.
    if (typeof parsed === 'string') add(at(field), parsed, refusedByUrlParse(parsed));
    else endpoints[at(field)] = parsed;
  };
  const pair = (user: string, password: string) => {
    if (filled(config[user]) && !filled(config[password])) add(at(password), `is required with ${user}`);
    if (!filled(config[user]) && filled(config[password])) add(at(user), `is required with ${password}`);
  };

  // Azure (pkg/registries/azure/azure.go): a password (a token will do) unless workload identity;
  // the user name is optional. A 'docker' config of an azure integration is read as an Azure one.
  const azure = () => {
    endpoint('endpoint');
    if (config.wifEnabled !== true) need('password', 'is required unless wifEnabled (the user name is optional: a token as the password will do)');
  };
  switch (configName) {
    case 'docker':
      if (type === 'azure') azure();
      else {
        endpoint('endpoint');
        pair('username', 'password');
      }
      break;
    case 'azure':
      azure();
      break;
    case 'google':
      endpoint('endpoint');
      // pkg/scanners/google validate(): a scanner names its project, and has no workload identity.
      if (categories.includes('SCANNER')) {
        need('project', 'is required for a Google scanner (Container Analysis)');
        if (config.wifEnabled === true) add(at('wifEnabled'), 'workload identities are not supported for scanner integrations');
      }
      if (config.wifEnabled !== true) {
        need('serviceAccount', 'is required unless wifEnabled');
        if (filled(config.serviceAccount) && !isServiceAccount(config.serviceAccount as string)) {
          add(at('serviceAccount'), 'must be the JSON key of a service account (with client_email and private_key)');
        }
      }
      break;
    case 'quay': {
      endpoint('endpoint');
      // pkg/registries/quay/quay.go validate(): a scanner cannot use a robot account; a registry
      // alone uses a robot account or an OAuth token, not both. No credentials at all is a public registry.
      const robot = config.registryRobotCredentials;
      const token = filled(config.oauthToken);
      const scannerOnly = categories.length === 1 && categories[0] === 'SCANNER';
      const registryOnly = categories.length === 1 && categories[0] === 'REGISTRY';
      if (isObject(robot)) {
        if (scannerOnly)
          add(at('registryRobotCredentials'), 'a Quay scanner integration cannot use robot credentials: give an OAuth token, or none for public images');
        else if (registryOnly && token) add(at('registryRobotCredentials'), 'a Quay registry integration uses robot credentials or an OAuth token, not both');
        else if (!registryOnly && !token)
          add(at('registryRobotCredentials'), 'a Quay scanner integration cannot use robot credentials: with SCANNER, give an OAuth token');
      }
      if (isObject(robot)) {
        if (!filled(robot.username)) add(`${configName}.registryRobotCredentials.username`, 'is required for a robot account');
        if (!filled(robot.password)) add(`${configName}.registryRobotCredentials.password`, 'is required for a robot account');
      }
      break;
    }
    case 'ibm':
      endpoint('endpoint');
      need('apiKey');
      break;
    case 'ecr': {
      // pkg/registries/ecr/ecr.go sanitizeConfiguration, with its `== ""` tests (a key of spaces is a
      // key): authorizationData is dropped when access keys, useIam or useAssumeRole are set too;
      // kept, it needs a username, a password and expiresAt; else access keys unless useIam, and
      // useAssumeRole needs a role and no endpoint.
      const given = (field: string) => typeof config[field] === 'string' && config[field] !== '';
      if (!given('registryId')) add(at('registryId'), 'is required');
      if (!given('region')) add(at('region'), 'is required');
      endpoint('endpoint', { required: false });
      const data = dropsAuthorizationData(config) ? undefined : config.authorizationData;
      if (isObject(data)) {
        const inData = (field: string, why: string) => {
          if (typeof data[field] !== 'string' || data[field] === '') add(`${configName}.authorizationData.${field}`, why);
        };
        inData('username', 'is required with authorizationData');
        inData('password', 'is required with authorizationData');
        inData('expiresAt', 'is required with authorizationData: when the token expires');
      } else {
        if (config.useIam !== true) {
          if (!given('accessKeyId')) add(at('accessKeyId'), 'is required unless useIam or authorizationData');
          if (!given('secretAccessKey')) add(at('secretAccessKey'), 'is required unless useIam or authorizationData');
        }
        if (config.useAssumeRole === true) {
          if (given('endpoint')) add(at('endpoint'), 'AssumeRole cannot be done with an endpoint defined');
          if (!given('assumeRoleId')) add(at('assumeRoleId'), "is required with useAssumeRole: the name of the role in the registry's account");
        }
      }
      if (given('region') && !/^[a-z]{2}(-[a-z]+)+-\d+$/.test(config.region as string)) add(at('region'), 'is not an AWS region, such as us-east-1');
      if (given('registryId') && !/^\d{12}$/.test(config.registryId as string)) add(at('registryId'), 'must be a 12-digit AWS account id');
      break;
    }
    case 'clairify':
      endpoint('endpoint');
      if (filled(config.grpcEndpoint)) {
        const parsed = parseHostPort(config.grpcEndpoint as string, 8443);
        if (typeof parsed === 'string') add(at('grpcEndpoint'), parsed, refusedByUrlParse(parsed));
      }
      break;
    case 'clair':
    case 'clairV4':
      endpoint('endpoint');
      break;
    case 'scannerV4':
      // Empty is StackRox's in-cluster default (scannerv4.go newScanner), which the check then
      // contacts. Given, each is `[host]:port`, as pkg/scannerv4/client/options.go validateOptions
      // checks with net.SplitHostPort: no port, or a scheme (`https://host:8443` has too many
      // colons), is a 400 before anything is contacted. The port must be a number here, since the
      // check dials it (`https://host` splits as host `https`, port `//host`, which gRPC cannot dial).
      for (const [field, role] of [
        ['indexerEndpoint', 'indexer'],
        ['matcherEndpoint', 'matcher'],
      ]) {
        const value = config[field];
        if (typeof value !== 'string' || value === '') continue;
        const split = splitHostPort(value);
        if (typeof split === 'string') add(at(field), `invalid ${role} address (want [host]:port): ${split}`);
        else if (!/^\d{1,5}$/.test(split.port) || Number(split.port) > 65535)
          add(at(field), `invalid ${role} address (want [host]:port): port '${split.port}' is not a number from 0 to 65535`);
        else {
          const parsed = parseHostPort(value, 8443);
          if (typeof parsed === 'string') add(at(field), `invalid ${role} address (want [host]:port): ${parsed}`);
        }
      }
      break;
  }
}

/**
 * ecr.go sanitizeConfiguration: "Erase authorization data if any other auth mechanism was set."
 * The decoded request keeps it (its password is still a secret to mask); the config tested does not.
 */
function dropsAuthorizationData(config: Config): boolean {
  const given = (value: unknown) => typeof value === 'string' && value !== '';
  return config.useIam === true || given(config.accessKeyId) || given(config.secretAccessKey) || config.useAssumeRole === true;
}

/** The configuration the test uses: ECR's without the authorizationData StackRox erases. */
function testedConfig(configName: ConfigName, config: Config): Config {
  if (configName !== 'ecr' || config.authorizationData === undefined || !dropsAuthorizationData(config)) return config;
  const { authorizationData: _dropped, ...rest } = config;
  return rest;
}

function isServiceAccount(text: string): boolean {
  try {
    const parsed = JSON.parse(text) as { client_email?: unknown; private_key?: unknown };
    return typeof parsed.client_email === 'string' && typeof parsed.private_key === 'string';
  } catch {
    return false;
  }
}
