// Validation before any network call: every problem at once, each with its field.
import { compileSchema, CONFIG_NAMES, type Category, type ConfigName } from './schema';
import { parseEndpoint, parseHostPort } from './endpoint';
import type { FieldViolation } from './grpc';

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

const CATEGORY_NUMBERS: Category[] = ['REGISTRY', 'SCANNER', 'NODE_SCANNER'];

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

export type Validation = { ok: true; integration: Integration } | { ok: false; violations: FieldViolation[] };

/** Compiles the schema once; the function it returns validates one request body. */
export function createValidator(): (body: unknown) => Validation {
  const checkSchema = compileSchema();
  return (body) => {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      return { ok: false, violations: [{ field: '(body)', description: 'must be a JSON object' }] };
    }
    // One violation per field: the first problem found with it.
    const violations: FieldViolation[] = [];
    const bad = new Set<string>();
    const add = (field: string, description: string) => {
      if (!bad.has(field)) violations.push({ field, description });
      bad.add(field);
    };
    for (const v of checkSchema(body)) add(v.field, v.description);
    const value = body as Record<string, unknown>;

    const name = value.name;
    if (typeof name !== 'string' || name.trim() === '') add('name', 'is required');

    const categories = Array.isArray(value.categories)
      ? value.categories.map((c) => (typeof c === 'number' ? CATEGORY_NUMBERS[c] : c)).filter((c): c is Category => typeof c === 'string')
      : [];
    if (!Array.isArray(value.categories) || value.categories.length === 0) add('categories', 'at least one category is required');

    const present = CONFIG_NAMES.filter((config) => value[config] !== undefined && value[config] !== null);
    if (present.length === 0) add('(config)', `exactly one of ${CONFIG_NAMES.join(', ')} is required`);
    if (present.length > 1) add('(config)', `exactly one configuration is allowed, got ${present.join(', ')}`);

    const type = value.type;
    const kind = typeof type === 'string' ? TYPES[type] : undefined;
    if (typeof type !== 'string' || type === '') add('type', 'is required');
    else if (kind === undefined) add('type', `unknown type '${type}': expected one of ${Object.keys(TYPES).join(', ')}`);

    const configName = present[0];
    if (kind !== undefined && present.length === 1 && !kind.configs.includes(configName)) {
      add(configName, `a '${String(type)}' integration takes ${kind.configs.join(' or ')}, not ${configName}`);
    }
    if (kind !== undefined) {
      categories.forEach((category, i) => {
        if (!kind.categories.includes(category)) add(`categories[${i}]`, `a '${String(type)}' integration cannot be ${category}; it can be ${kind.categories.join(' or ')}`);
      });
    }

    const endpoints: Record<string, URL> = {};
    if (present.length === 1 && !bad.has(configName) && isObject(value[configName])) {
      requireFields(configName, value[configName] as Config, add, endpoints);
    }
    if (violations.length > 0) return { ok: false, violations };
    return {
      ok: true,
      integration: { name: (name as string).trim(), type: type as string, categories: [...new Set(categories)], configName, config: value[configName] as Config, endpoints },
    };
  };
}

function isObject(value: unknown): value is Config {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const filled = (value: unknown): boolean => typeof value === 'string' && value.trim() !== '';

// Each config's own rules. Fields with a schema violation are already reported and skipped here.
function requireFields(configName: ConfigName, config: Config, add: (field: string, description: string) => void, endpoints: Record<string, URL>): void {
  const at = (field: string) => `${configName}.${field}`;
  const need = (field: string, why = 'is required') => {
    if (!filled(config[field])) add(at(field), why);
  };
  const endpoint = (field: string, options: { required?: boolean; allowHttp?: boolean } = {}) => {
    const value = config[field];
    if (!filled(value)) {
      if (options.required !== false) add(at(field), 'is required');
      return;
    }
    const parsed = parseEndpoint(value as string, { insecure: config.insecure === true, allowHttp: options.allowHttp });
    if (typeof parsed === 'string') add(at(field), parsed);
    else endpoints[at(field)] = parsed;
  };
  const pair = (user: string, password: string) => {
    if (filled(config[user]) && !filled(config[password])) add(at(password), `is required with ${user}`);
    if (!filled(config[user]) && filled(config[password])) add(at(user), `is required with ${password}`);
  };

  switch (configName) {
    case 'docker':
      endpoint('endpoint');
      pair('username', 'password');
      break;
    case 'azure':
      endpoint('endpoint');
      if (config.wifEnabled !== true) {
        need('username', 'is required unless wifEnabled');
        need('password', 'is required unless wifEnabled');
      }
      break;
    case 'google':
      endpoint('endpoint');
      if (config.wifEnabled !== true) {
        need('serviceAccount', 'is required unless wifEnabled');
        if (filled(config.serviceAccount) && !isServiceAccount(config.serviceAccount as string)) {
          add(at('serviceAccount'), 'must be the JSON key of a service account (with client_email and private_key)');
        }
      }
      break;
    case 'quay': {
      endpoint('endpoint');
      const robot = config.registryRobotCredentials;
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
      need('registryId');
      need('region');
      endpoint('endpoint', { required: false });
      const data = config.authorizationData;
      if (isObject(data)) {
        if (!filled(data.username)) add(`${configName}.authorizationData.username`, 'is required with authorizationData');
        if (!filled(data.password)) add(`${configName}.authorizationData.password`, 'is required with authorizationData');
      } else if (config.useIam !== true) {
        need('accessKeyId', 'is required unless useIam or authorizationData');
        need('secretAccessKey', 'is required unless useIam or authorizationData');
      }
      if (config.useAssumeRole === true) need('assumeRoleId', 'is required with useAssumeRole');
      if (filled(config.region) && !/^[a-z]{2}(-[a-z]+)+-\d+$/.test(config.region as string)) add(at('region'), 'is not an AWS region, such as us-east-1');
      if (filled(config.registryId) && !/^\d{12}$/.test(config.registryId as string)) add(at('registryId'), 'must be a 12-digit AWS account id');
      break;
    }
    case 'clairify':
      endpoint('endpoint', { allowHttp: true });
      break;
    case 'clair':
    case 'clairV4':
      endpoint('endpoint');
      break;
    case 'scannerV4':
      for (const field of ['indexerEndpoint', 'matcherEndpoint']) {
        if (!filled(config[field])) add(at(field), 'is required');
        else {
          const parsed = parseHostPort(config[field] as string, 8443);
          if (typeof parsed === 'string') add(at(field), parsed);
        }
      }
      break;
  }
}

function isServiceAccount(text: string): boolean {
  try {
    const parsed = JSON.parse(text) as { client_email?: unknown; private_key?: unknown };
    return typeof parsed.client_email === 'string' && typeof parsed.private_key === 'string';
  } catch {
    return false;
  }
}
