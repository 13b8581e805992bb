// POST /v1/imageintegrations/test: authorize, validate, run each category's check in order, and
// answer {} or the gRPC-gateway error. Every text that leaves (answers, log lines) is redacted.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Function as FunctionModule, Logger } from '../../../lib/index';
import { ecrLogin, type AwsSettings, type EcrConfig } from './ecr';
import { badRequest, grpcErrorBody, ServiceError } from './grpc';
import { NetworkFailure, type Limits } from './http';
import { checkRegistry, TestFailure, type CheckContext, type RegistryTarget } from './registry';
import { checkHttpScanner, checkScannerV4 } from './scanners';
import { maskSecrets, Redactor, secretValues } from './secrets';
import { createValidator, type Integration } from './validate';
import type { Category } from './schema';

export interface ServiceOptions {
  limits: Limits;
  /** Bound on one whole test, in ms. */
  testTimeout: number;
  /** When set, requests need `Authorization: Bearer <apiToken>`. */
  apiToken?: string;
  aws: AwsSettings;
}

export const PATH = '/v1/imageintegrations/test';

/** The function module: routes, errorBody and init, with everything compiled once here. */
export function createService(options: ServiceOptions): FunctionModule {
  const validate = createValidator();
  const authorize = authorizer(options.apiToken);

  async function test(context: Context, body: unknown): Promise<object> {
    authorize(context.headers.authorization);
    const request = asObject(body);
    const redactor = new Redactor(secretValues(request));
    context.log.info({ integration: redactor.redactValue(maskSecrets(request)) }, 'testing image integration');

    const result = validate(request);
    if (!result.ok) {
      const violations = redactor.redactValue(result.violations);
      const message = `invalid image integration: ${violations.map((v) => `${v.field}: ${v.description}`).join('; ')}`;
      throw badRequest(message, violations);
    }
    const signal = AbortSignal.timeout(options.testTimeout);
    const ctx: CheckContext = { limits: options.limits, signal, redactor };
    try {
      const notes = await runChecks(result.integration, ctx, options.aws);
      context.log.info({ name: result.integration.name, type: result.integration.type, checked: notes.map((n) => redactor.redact(n)) }, 'image integration test passed');
      return {};
    } catch (err) {
      throw failure(err, redactor, context.log, signal, options.testTimeout);
    }
  }

  return {
    routes: { [`POST ${PATH}`]: test },
    errorBody: grpcErrorBody,
    init({ log }: { log: Logger }) {
      if (options.apiToken === undefined) {
        log.warn(`IMAGE_INTEGRATION_API_TOKEN is not set: anyone who can reach POST ${PATH} may use it`);
      }
    },
  };
}

// Known failures become a 400 with a redacted message; anything else is logged redacted and
// answered as a generic 500, so no exception text that might hold a secret leaves unmasked.
export function failure(err: unknown, redactor: Redactor, log: Logger, signal: AbortSignal, timeout: number): ServiceError {
  if (signal.aborted) return new ServiceError(400, `the test did not finish within ${timeout / 1000}s`);
  if (err instanceof TestFailure || err instanceof NetworkFailure) return new ServiceError(400, redactor.redact(err.message));
  log.error({ err: { type: (err as Error)?.name, message: redactor.redact(String((err as Error)?.message ?? err)), stack: redactor.redact(String((err as Error)?.stack ?? '')) } }, 'image integration test failed unexpectedly');
  return new ServiceError(500, 'internal error');
}

function asObject(body: unknown): unknown {
  // Clients that send JSON without a JSON content type still mean JSON.
  if (Buffer.isBuffer(body) || typeof body === 'string') {
    try {
      return JSON.parse(body.toString());
    } catch {
      throw badRequest('the request body is not JSON', [{ field: '(body)', description: 'must be a JSON object' }]);
    }
  }
  if (body === undefined) throw badRequest('the request body is empty', [{ field: '(body)', description: 'must be a JSON object' }]);
  return body;
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

/** Runs the check of each category in order (each distinct check once); returns what was checked. */
async function runChecks(integration: Integration, ctx: CheckContext, aws: AwsSettings): Promise<string[]> {
  const notes: string[] = [];
  const done = new Set<string>();
  for (const category of integration.categories) {
    const kind = checkKind(integration, category);
    if (done.has(kind)) continue;
    done.add(kind);
    notes.push(await runCheck(kind, integration, ctx, aws));
  }
  return notes;
}

type CheckKind = 'registry' | 'clairify' | 'clair' | 'clairV4' | 'scannerV4';

function checkKind(integration: Integration, category: Category): CheckKind {
  if (category === 'REGISTRY') return 'registry';
  switch (integration.configName) {
    case 'clairify':
    case 'clair':
    case 'clairV4':
    case 'scannerV4':
      return integration.configName;
    default:
      // Quay and Google scanners are tested through their registry, as StackRox does.
      return 'registry';
  }
}

async function runCheck(kind: CheckKind, integration: Integration, ctx: CheckContext, aws: AwsSettings): Promise<string> {
  const { config, configName, endpoints } = integration;
  const endpoint = endpoints[`${configName}.endpoint`];
  const insecure = config.insecure === true;
  switch (kind) {
    case 'clairify':
    case 'clair':
    case 'clairV4':
      await checkHttpScanner(kind, endpoint, insecure, ctx);
      return `${kind} at ${endpoint.host} answered`;
    case 'scannerV4':
      return checkScannerV4(config.indexerEndpoint as string, config.matcherEndpoint as string, ctx);
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
      return { endpoint, insecure, path, username: username || undefined, password: password || undefined };
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
      const ecr = config as unknown as EcrConfig;
      const login = await ecrLogin(ecr, aws, ctx);
      const address = endpoint ?? new URL(login.proxyEndpoint ?? `https://${ecr.registryId}.dkr.ecr.${ecr.region}.amazonaws.com`);
      return { endpoint: address, insecure, path, username: login.username, password: login.password };
    }
    default:
      throw new TestFailure(`${configName} is not a registry configuration`);
  }
}
