// The image integration test service as a funcrun function: `npm start` (`funcrun serve .`).
// The environment is read here, once; everything below takes options.
import { readFileSync } from 'node:fs';
import { parseBytes, parseCount, parseDuration, parseSwitch } from 'funcrun';
import { createService } from './lib/service';

const env = process.env;
const duration = (name: string, fallback: string) => parseDuration(env[name] ?? fallback, name);

// Proxy variables: those StackRox's clients read (Go's http.ProxyFromEnvironment), grpc-js's, curl's
// ALL_PROXY and node's NODE_USE_ENV_PROXY. This service uses none of them, on any path, and says so at start.
const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'ALL_PROXY', 'all_proxy', 'grpc_proxy', 'NODE_USE_ENV_PROXY'];

const service = createService({
  limits: {
    connectTimeout: duration('IMAGE_INTEGRATION_CONNECT_TIMEOUT', '5s'),
    responseTimeout: duration('IMAGE_INTEGRATION_RESPONSE_TIMEOUT', '10s'),
    maxBodyBytes: parseBytes(env.IMAGE_INTEGRATION_MAX_RESPONSE_BYTES ?? '64kb', 'IMAGE_INTEGRATION_MAX_RESPONSE_BYTES'),
    resolveTimeout: env.IMAGE_INTEGRATION_RESOLVE_TIMEOUT ? duration('IMAGE_INTEGRATION_RESOLVE_TIMEOUT', '5s') : undefined,
    dnsServers: env.IMAGE_INTEGRATION_DNS_SERVERS
      ? env.IMAGE_INTEGRATION_DNS_SERVERS.split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined,
    allowPrivate: parseSwitch(env.IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS ?? 'false', 'IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS'),
    ca: env.IMAGE_INTEGRATION_CA_FILE ? [readFileSync(env.IMAGE_INTEGRATION_CA_FILE, 'utf8')] : undefined,
  },
  testTimeout: duration('IMAGE_INTEGRATION_TEST_TIMEOUT', '30s'),
  maxConcurrentTests: parseCount(env.IMAGE_INTEGRATION_MAX_CONCURRENT_TESTS ?? '32', 'IMAGE_INTEGRATION_MAX_CONCURRENT_TESTS'),
  apiToken: env.IMAGE_INTEGRATION_API_TOKEN || undefined,
  maxRequestBytes: parseBytes(env.IMAGE_INTEGRATION_MAX_REQUEST_BYTES ?? '1mb', 'IMAGE_INTEGRATION_MAX_REQUEST_BYTES'),
  aws: {
    ecrEndpoint: env.IMAGE_INTEGRATION_ECR_API_ENDPOINT || undefined,
    stsEndpoint: env.IMAGE_INTEGRATION_STS_ENDPOINT || undefined,
    registryEndpoint: env.IMAGE_INTEGRATION_ECR_REGISTRY_ENDPOINT || undefined,
    allowIam: parseSwitch(env.IMAGE_INTEGRATION_ALLOW_ECR_IAM ?? 'false', 'IMAGE_INTEGRATION_ALLOW_ECR_IAM'),
    allowAssumeRole: parseSwitch(env.IMAGE_INTEGRATION_ALLOW_ECR_ASSUME_ROLE ?? 'false', 'IMAGE_INTEGRATION_ALLOW_ECR_ASSUME_ROLE'),
    ownCredentials:
      env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
        ? { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY, sessionToken: env.AWS_SESSION_TOKEN || undefined }
        : undefined,
  },
  google: {
    tokenEndpoint: env.IMAGE_INTEGRATION_GOOGLE_TOKEN_ENDPOINT || undefined,
    containerAnalysisEndpoint: env.IMAGE_INTEGRATION_CONTAINER_ANALYSIS_ENDPOINT || undefined,
  },
  proxyVariables: PROXY_VARIABLES.filter((name) => env[name]),
});

export const routes = service.routes;
export const errorBody = service.errorBody;
export const init = service.init;
export const authorize = service.authorize;
