// The image integration test service as a funcrun function: `npm start` (`funcrun serve .`).
// The environment is read here, once, through the table of settings (lib/settings.ts); everything
// below takes options.
import { createService } from './lib/service';
import { readSettings } from './lib/settings';

const settings = readSettings(process.env);

const service = createService({
  limits: {
    connectTimeout: settings.connectTimeout,
    responseTimeout: settings.responseTimeout,
    maxBodyBytes: settings.maxResponseBytes,
    resolveTimeout: settings.resolveTimeout,
    dnsServers: settings.dnsServers,
    allowPrivate: settings.allowPrivate,
    ca: settings.ca,
  },
  testTimeout: settings.testTimeout,
  maxConcurrentTests: settings.maxConcurrentTests,
  apiToken: settings.apiToken,
  maxRequestBytes: settings.maxRequestBytes,
  aws: {
    ecrEndpoint: settings.ecrEndpoint,
    stsEndpoint: settings.stsEndpoint,
    registryEndpoint: settings.registryEndpoint,
    allowIam: settings.allowIam,
    allowAssumeRole: settings.allowAssumeRole,
    ownCredentials: settings.ownCredentials,
  },
  google: {
    tokenEndpoint: settings.googleTokenEndpoint,
    containerAnalysisEndpoint: settings.containerAnalysisEndpoint,
  },
  proxyVariables: settings.proxyVariables,
});

export const routes = service.routes;
export const errorBody = service.errorBody;
export const init = service.init;
export const authorize = service.authorize;
