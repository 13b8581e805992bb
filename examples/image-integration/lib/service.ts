// POST /v1/imageintegrations/test and /test/updated: authorize, decode and validate, run each category's check in order, and
// answer {} or the gRPC-gateway error. Every text that leaves (answers, log lines) is redacted.
import { isUtf8 } from 'node:buffer';
import { createHash, timingSafeEqual } from 'node:crypto';
import { streamed, type BodyStream, type Context, type Function as FunctionModule, type Logger, type RequestInfo } from 'funcrun';
import { admit, answeredMessage, errorAnswer, methodNotAllowed, readBody, wantsPretty } from './gateway';
import { ecrLogin, ecrRegistry, type AwsSettings, type EcrConfig } from './ecr';
import { checkGoogleScanner, type GoogleSettings } from './google';
import { badRequest, grpcErrorBody, ServiceError, type FieldViolation } from './grpc';
import { NetworkFailure, type Limits } from './http';
import { checkRegistry, TestFailure, type CheckContext, type RegistryTarget } from './registry';
import { checkClairifyNodeScanner, checkHttpScanner, checkScannerV4, grpcTargets } from './scanners';
import { MASK, maskSecrets, Redactor, secretValues } from './secrets';
import { parseHostPort, refusedBeforeLookup as refusedEndpoint } from './endpoint';
import { TYPES, createValidator, isSecretField, type Integration, type Validation } from './validate';
import { CATEGORIES, CONFIG_NAMES, longestSecret, secretPaths, type Category } from './schema';

export interface ServiceOptions {
  limits: Limits;
  /** Bound on one whole test, in ms. */
  testTimeout: number;
  /**
   * Tests running at once, at most; past it a request is answered 429 (RESOURCE_EXHAUSTED) with
   * Retry-After. Each test holds sockets and memory, and a container has few file descriptors.
   */
  maxConcurrentTests?: number;
  /** When set, requests need `Authorization: Bearer <apiToken>`. */
  apiToken?: string;
  /**
   * The largest request body read, in bytes (default 1 MiB); a longer one is a 429,
   * RESOURCE_EXHAUSTED, as StackRox answers a message over its gRPC maximum.
   */
  maxRequestBytes?: number;
  aws: AwsSettings;
  /** Where Google's token endpoint and Container Analysis are (the Google scanner's test); defaults are Google's. */
  google?: GoogleSettings;
  /** The proxy variables set in the environment (HTTPS_PROXY...): no path uses a proxy, and init warns that they are not used. */
  proxyVariables?: string[];
}

export const PATH = '/v1/imageintegrations/test';
/** TestUpdatedImageIntegration: an UpdateImageIntegrationRequest, `{ config, updatePassword }`. */
export const UPDATED_PATH = '/v1/imageintegrations/test/updated';

/** The request body read at most by default: funcrun's own default body limit. */
const DEFAULT_MAX_REQUEST_BYTES = 1_048_576;

/** The longest `message` of a 400 for an invalid request (violations are capped too). */
const MAX_MESSAGE = 4096;

/** The function module: routes, errorBody and init, with everything compiled once here. */
export function createService(options: ServiceOptions): FunctionModule {
  const validate = createValidator();
  const authorize = authorizer(options.apiToken);
  const maxConcurrent = options.maxConcurrentTests ?? 32;
  let running = 0;

  async function test(context: Context, text: string, update: boolean): Promise<object> {
    const result = validate(undefined, { text, update });
    const { request } = result;
    // Secrets are the secret fields, and anything in an ignored field (a mistyped `pasword`), within bounds (guessedSecrets).
    const redactor = new Redactor(secretValues(request.integration));
    for (const value of guessedSecrets(request.ignoredStrings)) redactor.addAsIs(value);
    await redactor.ready();
    // Logged as decoded: ignored fields by name only (cut to 40 characters), never their values.
    context.log.info(
      {
        integration: redactor.redactValue(maskSecrets(request.integration)),
        ...(update ? { updatePassword: request.updatePassword } : {}),
        ignored: redactor.redactValue(request.ignored),
      },
      'testing image integration',
    );

    let others = result.ok ? [] : redactor.redactValue(result.violations);
    const listed = (violations: FieldViolation[]) => violations.map((v) => `${v.field}: ${v.description}`).join('; ');
    const cut = (message: string) => (message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 1)}…` : message);
    // In StackRox's order (central/imageintegration/service/service_impl.go
    // TestUpdatedImageIntegration; /test is /test/updated with updatePassword true): grpc-gateway's
    // decoding and validateIntegration (a name, a category, no local endpoint, the IAM gate) come
    // first; then reconcileUpdateImageIntegrationRequest looks an id up (this service stores none,
    // so every id is one StackRox would not know: 404), and updatePassword false (or absent) asks
    // for the stored credentials, which needs an id; then the factories check the configuration.
    // So nothing is contacted for such a request, and the credentials it leaves out for the stored
    // ones are not what is wrong with it.
    if (result.ok || !result.beforeLookup) {
      const refused = refusedBeforeLookup(request.integration, result.endpoints, options);
      if (refused !== undefined) {
        // Said at info as a failed test is: the operator learns which setting allows it.
        const answer = new ServiceError(400, redactor.redact(refused));
        context.log.info(
          {
            name: redactor.redact(String(request.integration.name ?? '')),
            type: redactor.redact(String(request.integration.type ?? '')),
            outcome: 'refused',
            reason: answer.message,
          },
          'image integration test failed',
        );
        throw answer;
      }
      const id = typeof request.integration.id === 'string' ? request.integration.id : '';
      if (id !== '') throw new ServiceError(404, `image integration ${JSON.stringify(redactor.redact(id))} not found: not found`);
      if (update && !request.updatePassword) throw new ServiceError(400, 'id required for stored credential reconciliation: invalid arguments');
    } else if (update && !request.updatePassword) {
      const leftOut = new Set(missingCredentials(result, request.integration));
      others = others.filter((v) => !leftOut.has(v.field));
    }
    if (!result.ok) throw badRequest(cut(`invalid image integration: ${listed(others)}`), others);
    if (running >= maxConcurrent) {
      throw new ServiceError(429, `too many image integration tests at once (${maxConcurrent}); retry shortly`, [], { 'retry-after': '1' });
    }
    // A test ends at its own timeout, or when its caller goes away: nobody would read the answer.
    const signal = AbortSignal.any([AbortSignal.timeout(options.testTimeout), context.signal]);
    const ctx: CheckContext = { limits: options.limits, signal, redactor };
    running++;
    // One line at info per test, passed or failed: its type, its endpoints' hosts, the outcome and the reason (masked).
    const summary = {
      name: redactor.redact(result.integration.name),
      type: redactor.redact(result.integration.type),
      hosts: redactor.redactValue(testedHosts(result.integration, options.aws)),
    };
    try {
      const notes = await runChecks(result.integration, ctx, options.aws, options.google ?? {});
      context.log.info({ ...summary, outcome: 'passed', checked: notes.map((n) => redactor.redact(n)) }, 'image integration test passed');
      return {};
    } catch (err) {
      // What a check learned and did not wait for (a secret met on its way out) is built in turns of its own, not in this one.
      await redactor.ready();
      const answer = failure(err, redactor, context.log, signal, options.testTimeout);
      context.log.info({ ...summary, outcome: 'failed', status: answer.statusCode, reason: answer.message }, 'image integration test failed');
      throw answer;
    } finally {
      running--;
    }
  }

  /**
   * One route per path, for every method, as grpc-gateway holds them: POST runs the test, any other
   * method is its 501 (methodNotAllowed). The body comes unread (funcrun's streamBody) and is read
   * here as JSON whatever its media type, as the gateway reads it; an answer is pretty-printed when
   * the request asks for it (wantsPretty).
   */
  const route = (update: boolean) =>
    streamed(async (context: Context, body: BodyStream) => {
      if (context.method !== 'POST') return errorAnswer(methodNotAllowed(), wantsPretty(context));
      try {
        return await test(context, bodyText(await readBody(body, maxRequestBytes)), update);
      } catch (err) {
        // A body funcrun refused while it was read is answered by funcrun, whatever is returned.
        if (err instanceof ServiceError && body.refused === undefined && wantsPretty(context)) return errorAnswer(err, true, answeredMessage(err));
        throw err;
      }
    });
  const maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  const ownPaths = new Set([PATH, UPDATED_PATH]);
  // funcrun's router takes a path with a trailing slash as its route; grpc-gateway's patterns match
  // none (an empty last segment): a 404, as for any path that is not a route.
  const withSlash = new Set([`${PATH}/`, `${UPDATED_PATH}/`]);

  return {
    routes: { [PATH]: route(false), [UPDATED_PATH]: route(true) },
    errorBody: grpcErrorBody,
    // Before funcrun reads the body, and for /metrics too: an unauthenticated caller costs nothing.
    // Then what grpc-gateway refuses by the headers alone, before funcrun would answer it otherwise.
    authorize: (request: RequestInfo) => {
      authorize(firstHeader(request.headers.authorization));
      if (withSlash.has(request.path)) throw new ServiceError(404, `no route for ${request.method} ${request.path}`);
      if (ownPaths.has(request.path)) admit(request, maxRequestBytes);
    },
    init({ log }: { log: Logger }) {
      if (options.apiToken === undefined) {
        log.warn(`IMAGE_INTEGRATION_API_TOKEN is not set: anyone who can reach POST ${PATH} may use it`);
      }
      if (options.proxyVariables !== undefined && options.proxyVariables.length > 0) {
        log.warn(
          `${options.proxyVariables.join(', ')} ${options.proxyVariables.length === 1 ? 'is' : 'are'} set and not used: this service contacts registries and scanners directly, on every path (HTTP and gRPC), so that the endpoint policy sees the address connected to`,
        );
      }
    },
  };
}

/**
 * What validateIntegration (service_impl.go) refuses beyond the body's own violations, before an id
 * is looked up: an endpoint that names a local or metadata address (pkg/endpoints, here by this
 * service's policy), and ECR's useIam where it is not allowed (validateIAMRoleCapability; here the
 * operator's IMAGE_INTEGRATION_ALLOW_ECR_IAM). Names that resolve to such addresses are refused when
 * they are resolved, as StackRox refuses only what the text says.
 */
function refusedBeforeLookup(integration: Record<string, unknown>, endpoints: Record<string, URL>, options: ServiceOptions): string | undefined {
  const allowPrivate = options.limits.allowPrivate === true;
  for (const url of Object.values(endpoints)) {
    const why = refusedEndpoint(url.hostname, allowPrivate);
    if (why !== undefined) return why;
  }
  const clairify = integration.clairify as Record<string, unknown> | undefined;
  if (typeof clairify?.grpcEndpoint === 'string' && clairify.grpcEndpoint !== '') {
    const parsed = parseHostPort(clairify.grpcEndpoint, 8443);
    const why = typeof parsed === 'string' ? undefined : refusedEndpoint(parsed.host, allowPrivate);
    // As the Ping's own check words it.
    if (why !== undefined) return `node scanner: ${why}`;
  }
  const ecr = integration.ecr as Record<string, unknown> | undefined;
  if (ecr?.useIam === true && options.aws.allowIam !== true) {
    return 'using container IAM role for ECR scanning is not available in this environment: useIam is not enabled on this service (the operator sets IMAGE_INTEGRATION_ALLOW_ECR_IAM=true)';
  }
  return undefined;
}

/**
 * The credential fields /test/updated with updatePassword false cannot test, as `config.` paths:
 * StackRox would take them from the stored integration; this service stores none. They are
 * missing when a secret field is reported missing, is the mask `******` the UI shows for a
 * stored one, or when the config has secret fields and none is filled (and no wifEnabled or
 * useIam replaces them).
 */
function missingCredentials(result: Validation, integration: Record<string, unknown>): string[] {
  const configName = CONFIG_NAMES.find((name) => integration[name] !== undefined);
  if (configName === undefined) return [];
  const config = integration[configName] as Record<string, unknown>;
  const paths = secretPaths().filter((p) => p[0] === configName);
  if (paths.length === 0) return [];
  const valueAt = (p: string[]) =>
    p.slice(1).reduce<unknown>((v, key) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined), config);
  const reported = result.ok ? [] : result.violations.filter((v) => isSecretField(v.field)).map((v) => v.field);
  const masked = paths.filter((p) => valueAt(p) === MASK).map((p) => `config.${p.join('.')}`);
  const missing = [...new Set([...reported, ...masked])];
  if (missing.length > 0) return missing;
  const alternative = config.wifEnabled === true || config.useIam === true;
  const anyFilled = paths.some((p) => typeof valueAt(p) === 'string' && valueAt(p) !== '');
  return anyFilled || alternative ? [] : paths.map((p) => `config.${p.join('.')}`);
}

/** The body as text: the bytes must be UTF-8 (protojson refuses anything else); a BOM is not JSON, as Go's decoder reads it. */
function bodyText(bytes: Buffer): string {
  if (!isUtf8(bytes)) throw badRequest('the request body is not valid UTF-8', [{ field: '(body)', description: 'must be UTF-8 JSON' }]);
  return bytes.toString('utf8');
}

// The service's own words (config names, types, categories): a value equal to one is no secret, and
// masking it would garble every message that names it.
const VOCABULARY = new Set<string>([...CONFIG_NAMES, ...CATEGORIES, ...Object.keys(TYPES), 'true', 'false']);
const LONGEST_WORD = Math.max(...[...VOCABULARY].map((word) => word.length));

/** A value of an ignored field longer than any secret field may hold is no mistyped secret. */
const LONGEST_GUESS = longestSecret();
/**
 * The characters of ignored fields' values masked in all, each value counted as at least
 * GUESS_COST: four times the longest secret field (a mistyped key file and the rest), or 4,096
 * short values. A request has some thirty fields; what is past this is no mistyping, and is
 * never sent anywhere nor shown.
 */
const GUESSED_BUDGET = 4 * LONGEST_GUESS;
const GUESS_COST = 64;

/**
 * The values of ignored fields (a mistyped `pasword`) masked as possible secrets, shortest first:
 * none shorter than 4 characters (it would mask letters all over the service's own messages;
 * declared secret fields are masked whatever their length) or one of the service's own words, none
 * longer than the longest secret field, and no more than GUESSED_BUDGET in all. So a request of
 * 1 MiB of ignored text costs a few milliseconds, not seconds and a gigabyte.
 */
function guessedSecrets(strings: string[]): string[] {
  const candidates = strings.filter((value) => value.length >= 4 && value.length <= LONGEST_GUESS && !(value.length <= LONGEST_WORD && VOCABULARY.has(value)));
  if (candidates.length === 0) return candidates;
  // Shortest first without a sort: the longest length taken whole, from the cost of each length.
  const longest = candidates.reduce((max, value) => Math.max(max, value.length), 0);
  const costs = new Float64Array(longest + 1);
  for (const value of candidates) costs[value.length] += Math.max(value.length, GUESS_COST);
  let budget = GUESSED_BUDGET;
  let whole = 3; // values up to this length are all taken
  while (whole < longest && costs[whole + 1] <= budget) budget -= costs[++whole];
  const guessed: string[] = [];
  for (const value of candidates) {
    if (value.length <= whole) guessed.push(value);
    else if (value.length === whole + 1 && Math.max(value.length, GUESS_COST) <= budget) {
      budget -= Math.max(value.length, GUESS_COST);
      guessed.push(value);
    }
  }
  return guessed;
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

// Known failures become a 400 with a redacted message; anything else is logged redacted and
// answered as a generic 500, so no exception text that might hold a secret leaves unmasked.
export function failure(err: unknown, redactor: Redactor, log: Logger, signal: AbortSignal, timeout: number): ServiceError {
  if (signal.aborted) return new ServiceError(400, `the test did not finish within ${timeout / 1000}s`);
  if (err instanceof NetworkFailure && err.step === 'local') return new ServiceError(503, redactor.redact(err.message), [], { 'retry-after': '1' });
  if (err instanceof TestFailure || err instanceof NetworkFailure) return new ServiceError(400, redactor.redact(err.message));
  log.error(
    {
      err: {
        type: (err as Error)?.name,
        message: redactor.redact(String((err as Error)?.message ?? err)),
        stack: redactor.redact(String((err as Error)?.stack ?? '')),
      },
    },
    'image integration test failed unexpectedly',
  );
  return new ServiceError(500, 'internal error');
}

function authorizer(token: string | undefined): (header: string | undefined) => void {
  if (token === undefined) return () => undefined;
  const expected = createHash('sha256').update(token).digest();
  const challenge = { 'www-authenticate': 'Bearer' };
  return (header) => {
    // The token starts at the first non-space character: with `\s+(.+)` both quantifiers could take
    // the same spaces, and a failing match would try every split of them.
    const presented = /^Bearer\s+(\S.*)$/i.exec(header ?? '')?.[1];
    if (presented === undefined) throw new ServiceError(401, 'missing credentials: send Authorization: Bearer <token>', [], challenge);
    // Hashes have one length, so the comparison takes the same time whatever was sent.
    if (!timingSafeEqual(createHash('sha256').update(presented).digest(), expected)) {
      throw new ServiceError(401, 'invalid credentials', [], challenge);
    }
  };
}

/** The hosts of a test's endpoints, by field (`docker.endpoint`), for its log line; an ECR login's registry as `ecr.registry`. */
function testedHosts(integration: Integration, aws: AwsSettings): Record<string, string> {
  const hosts: Record<string, string> = {};
  for (const [field, url] of Object.entries(integration.endpoints)) hosts[field] = url.host;
  Object.assign(hosts, grpcTargets(integration.configName, integration.config, integration.categories.includes('NODE_SCANNER')));
  if (integration.configName === 'ecr' && integration.categories.includes('REGISTRY')) {
    try {
      hosts['ecr.registry'] = ecrRegistry(integration.config as unknown as EcrConfig, aws).host;
    } catch {
      // An ECR configuration that names no registry fails its test, and says why there.
    }
  }
  return hosts;
}

/** Runs the check of each category in order (each distinct check once); returns what was checked. */
async function runChecks(integration: Integration, ctx: CheckContext, aws: AwsSettings, google: GoogleSettings): Promise<string[]> {
  const notes: string[] = [];
  const done = new Set<string>();
  for (const category of integration.categories) {
    const kind = checkKind(integration, category);
    if (done.has(kind)) continue;
    done.add(kind);
    notes.push(await runCheck(kind, integration, ctx, aws, google));
  }
  return notes;
}

type CheckKind = 'registry' | 'clairify' | 'clairifyNode' | 'clair' | 'clairV4' | 'scannerV4' | 'googleScanner';

function checkKind(integration: Integration, category: Category): CheckKind {
  if (category === 'REGISTRY') return 'registry';
  // Clairify scans nodes over gRPC, and is tested there (clairify.go TestNodeScanner).
  if (category === 'NODE_SCANNER' && integration.configName === 'clairify') return 'clairifyNode';
  switch (integration.configName) {
    case 'clairify':
    case 'clair':
    case 'clairV4':
    case 'scannerV4':
      return integration.configName;
    case 'google':
      // Container Analysis, for the project (pkg/scanners/google Test()).
      return 'googleScanner';
    default:
      // Quay's scanner is tested through its registry, as StackRox does.
      return 'registry';
  }
}

async function runCheck(kind: CheckKind, integration: Integration, ctx: CheckContext, aws: AwsSettings, google: GoogleSettings): Promise<string> {
  const { config, configName, endpoints } = integration;
  const endpoint = endpoints[`${configName}.endpoint`];
  const insecure = config.insecure === true;
  switch (kind) {
    case 'clairify':
    case 'clair':
    case 'clairV4':
      await checkHttpScanner(kind, endpoint, insecure, ctx);
      return `${kind} at ${endpoint.host} answered`;
    case 'clairifyNode':
      return checkClairifyNodeScanner(config.grpcEndpoint as string | undefined, ctx);
    case 'googleScanner':
      return checkGoogleScanner(config.serviceAccount as string, config.project as string, google, ctx);
    case 'scannerV4':
      return checkScannerV4(config.indexerEndpoint as string | undefined, config.matcherEndpoint as string | undefined, ctx);
    case 'registry': {
      const target = await registryTarget(integration, ctx, aws);
      await checkRegistry(target, ctx);
      return `registry ${target.endpoint.host} accepted the credentials`;
    }
  }
}

const ANONYMOUS_PING = new Set(['artifactory', 'nexus']);

async function registryTarget(integration: Integration, ctx: CheckContext, aws: AwsSettings): Promise<RegistryTarget> {
  const { config, configName, endpoints, type } = integration;
  const path = ANONYMOUS_PING.has(type) ? '/v2/_catalog' : '/v2/';
  const insecure = config.insecure === true;
  const endpoint = endpoints[`${configName}.endpoint`];
  const wif = (what: string) =>
    new TestFailure(`authentication: ${what} uses workload identity (wifEnabled), which this service does not have; test it with a key instead`);
  switch (configName) {
    case 'docker':
    case 'azure': {
      if (config.wifEnabled === true) throw wif(type);
      const { username, password } = config as { username?: string; password?: string };
      // Azure's user name is optional: a token as the password goes with an empty one, as StackRox sends it.
      const user = username || (type === 'azure' && password ? '' : undefined);
      return { endpoint, insecure, path, username: user, password: password || undefined };
    }
    case 'ibm':
      return { endpoint, insecure, path, username: 'iamapikey', password: config.apiKey as string };
    case 'google':
      if (config.wifEnabled === true) throw wif(type);
      return { endpoint, insecure, path, username: '_json_key', password: config.serviceAccount as string };
    case 'quay': {
      const robot = config.registryRobotCredentials as { username: string; password: string } | undefined;
      if (robot !== undefined) return { endpoint, insecure, path, username: robot.username, password: robot.password };
      if (typeof config.oauthToken === 'string' && config.oauthToken !== '') {
        return { endpoint, insecure, path, username: '$oauthtoken', password: config.oauthToken };
      }
      return { endpoint, insecure, path };
    }
    case 'ecr': {
      // The token goes to the account's registry only; `endpoint` is the ECR API's (ecr.go).
      const ecr = config as unknown as EcrConfig;
      const login = await ecrLogin(ecr, aws, ctx);
      return { endpoint: ecrRegistry(ecr, aws), insecure, path, username: login.username, password: login.password };
    }
    default:
      throw new TestFailure(`${configName} is not a registry configuration`);
  }
}
