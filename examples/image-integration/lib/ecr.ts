// Amazon ECR: registry credentials from authorizationData, or from GetAuthorizationToken signed
// with SigV4 (after STS AssumeRole when asked). The AWS endpoints can be overridden (tests, VPC endpoints).
import { fetchBounded, headerSafe, type Reply } from './http';
import type { Redactor } from './secrets';
import { codeAndMessage, excerpt, quote } from './excerpt';
import { TestFailure, type CheckContext } from './registry';
import { signV4, type AwsCredentials } from './sigv4';
import { DOMParser } from '@xmldom/xmldom';

// The text of the first <name> element of an XML answer (STS answers in XML).
function xmlField(xml: string, name: string): string | undefined {
  try {
    const doc = new DOMParser({ onError: () => undefined }).parseFromString(xml, 'text/xml');
    return doc.getElementsByTagName(name)[0]?.textContent?.trim() || undefined;
  } catch {
    return undefined;
  }
}

export interface AwsSettings {
  /** Base URL of the ECR API; default https://api.ecr.<region>.amazonaws.com/ (an integration's `endpoint` wins). */
  ecrEndpoint?: string;
  /**
   * The registry an ECR login is tested against, `{registryId}` and `{region}` filled in; default
   * https://{registryId}.dkr.ecr.{region}.amazonaws.com, as StackRox forms it (another AWS
   * partition's domain, or a test's registry).
   */
  registryEndpoint?: string;
  /** Base URL of STS; default https://sts.<region>.amazonaws.com/ */
  stsEndpoint?: string;
  /** This service's own credentials, for `useIam`. */
  ownCredentials?: AwsCredentials;
  /**
   * The operator's switches (off by default, as StackRox gates them): `useIam` tests with this
   * service's own AWS identity, `useAssumeRole` assumes a role the caller names.
   */
  allowIam?: boolean;
  allowAssumeRole?: boolean;
}

export interface EcrConfig {
  registryId: string;
  region: string;
  /** The ECR API endpoint (a VPC endpoint), as StackRox reads it: never the registry. */
  endpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  useIam?: boolean;
  useAssumeRole?: boolean;
  assumeRoleId?: string;
  assumeRoleExternalId?: string;
  authorizationData?: { username: string; password: string; expiresAt?: string };
}

export interface RegistryLogin {
  username: string;
  password: string;
}

/** The registry an ECR login is tested against unless the operator names another (`registryEndpoint`). */
export const ECR_REGISTRY_TEMPLATE = 'https://{registryId}.dkr.ecr.{region}.amazonaws.com';

/** The registry an ECR integration is tested against: always the account's, in its region (ecr.go). */
export function ecrRegistry(config: EcrConfig, aws: AwsSettings): URL {
  const template = aws.registryEndpoint ?? ECR_REGISTRY_TEMPLATE;
  return new URL(template.replace('{registryId}', config.registryId).replace('{region}', config.region));
}

/** The username and password to log in to the registry with. */
export async function ecrLogin(config: EcrConfig, aws: AwsSettings, ctx: CheckContext): Promise<RegistryLogin> {
  const data = config.authorizationData;
  if (data !== undefined) {
    if (data.expiresAt !== undefined && Date.parse(data.expiresAt) <= Date.now()) {
      throw new TestFailure(`authentication: authorizationData expired at ${data.expiresAt}; get a new token`);
    }
    return { username: data.username, password: data.password };
  }
  let credentials: AwsCredentials;
  if (config.useIam === true && aws.allowIam !== true) {
    throw new TestFailure('authentication: useIam is not enabled on this service (the operator sets IMAGE_INTEGRATION_ALLOW_ECR_IAM=true)');
  }
  if (config.useAssumeRole === true && aws.allowAssumeRole !== true) {
    throw new TestFailure('authentication: useAssumeRole is not enabled on this service (the operator sets IMAGE_INTEGRATION_ALLOW_ECR_ASSUME_ROLE=true)');
  }
  if (config.useIam === true) {
    if (aws.ownCredentials === undefined) {
      throw new TestFailure('authentication: useIam needs AWS credentials of this service (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), and it has none');
    }
    // A request signed with this service's own identity goes only to AWS's ECR API (or the
    // operator's override): signed for a host the caller names, it could be replayed.
    if (config.endpoint !== undefined && config.endpoint.trim() !== '') {
      throw new TestFailure("authentication: with useIam this service's own identity signs only for AWS's ECR API, not for the endpoint the integration names");
    }
    credentials = aws.ownCredentials;
    // The service's own identity is a secret too: a peer that echoes what it was sent must not show it.
    for (const value of [credentials.accessKeyId, credentials.secretAccessKey, credentials.sessionToken]) if (value) ctx.redactor.add(value);
    await ctx.redactor.ready();
  } else {
    credentials = { accessKeyId: config.accessKeyId!, secretAccessKey: config.secretAccessKey! };
  }
  if (config.useAssumeRole === true) credentials = await assumeRole(config, credentials, aws, ctx);
  return getAuthorizationToken(config, credentials, aws, ctx);
}

/**
 * Where the ECR API is called: the integration's `endpoint` (https unless it says http, as
 * StackRox's BaseEndpoint), else the operator's override, else AWS's regional endpoint.
 */
function ecrApi(config: EcrConfig, aws: AwsSettings): URL {
  if (config.endpoint === undefined || config.endpoint.trim() === '') return awsEndpoint('ecr', config.region, aws);
  const text = config.endpoint.trim();
  const url = new URL(/^https?:\/\//i.test(text) ? text : `https://${text}`);
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/** Where the ECR API and STS are called: the override when set, else AWS's regional endpoint. */
export function awsEndpoint(service: 'ecr' | 'sts', region: string, aws: AwsSettings): URL {
  const override = service === 'ecr' ? aws.ecrEndpoint : aws.stsEndpoint;
  return new URL(override ?? regionalEndpoint(service, region));
}

/** AWS's regional endpoint of the ECR API or STS (`<region>` for the README's table: settings.ts). */
export function regionalEndpoint(service: 'ecr' | 'sts', region: string): string {
  return service === 'ecr' ? `https://api.ecr.${region}.amazonaws.com/` : `https://sts.${region}.amazonaws.com/`;
}

/**
 * An AWS API's error answer, its code and message quoted as any peer text is (excerpt.ts): JSON
 * (`__type`, `message`: the ECR API) or XML (`<Code>`, `<Message>`: STS), else an excerpt.
 */
function awsError(service: string, reply: Reply, redactor: Redactor): TestFailure {
  const text = reply.body.toString('utf8');
  let parts: string[] | undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (json !== null && typeof json === 'object' && !Array.isArray(json)) {
    const { __type: type, message, Message } = json as Record<string, unknown>;
    parts = codeAndMessage(typeof type === 'string' ? type.split('#').pop() : undefined, typeof message === 'string' ? message : Message);
  } else if (json === undefined) parts = codeAndMessage(xmlField(text, 'Code'), xmlField(text, 'Message'));
  const reason = parts === undefined ? excerpt(reply, redactor).replace(/^: /, '') : quote(parts, redactor, { cut: reply.truncated === true });
  const step = reply.status === 400 || reply.status === 403 ? 'authentication' : 'unexpected status';
  return new TestFailure(`${step}: ${service} answered HTTP ${reply.status}${reason === '' ? '' : ` (${reason})`}`);
}

async function getAuthorizationToken(config: EcrConfig, credentials: AwsCredentials, aws: AwsSettings, ctx: CheckContext): Promise<RegistryLogin> {
  signable(credentials);
  const url = ecrApi(config, aws);
  const body = JSON.stringify({ registryIds: [config.registryId] });
  const headers = signV4({
    method: 'POST',
    url,
    body,
    region: config.region,
    service: 'ecr',
    credentials,
    headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken' },
  });
  await learnSignature(headers, ctx.redactor);
  const reply = await fetchBounded(url, { method: 'POST', headers, body, signal: ctx.signal, redactor: ctx.redactor }, ctx.limits);
  if (reply.status !== 200) throw awsError('ECR GetAuthorizationToken', reply, ctx.redactor);
  let token: unknown;
  try {
    const json = JSON.parse(reply.body.toString('utf8')) as { authorizationData?: { authorizationToken?: unknown }[] };
    token = json.authorizationData?.[0]?.authorizationToken;
  } catch {
    token = undefined;
  }
  if (token !== undefined && typeof token !== 'string') {
    throw new TestFailure(`unexpected answer: ECR GetAuthorizationToken returned an authorization token that is ${jsonKind(token)}, not a string`);
  }
  const decoded = token === undefined ? '' : Buffer.from(token, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) throw new TestFailure('unexpected answer: ECR GetAuthorizationToken returned no authorization token');
  await ctx.redactor
    .add(token)
    .add(decoded.slice(colon + 1))
    .ready();
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * A signed request's signature, a secret of its own: anyone who has it may send the same request
 * again within minutes, with this service's identity under useIam. A peer that echoes the
 * Authorization header has it masked, as the Google token's assertion is (google.ts).
 */
async function learnSignature(headers: Record<string, string>, redactor: Redactor): Promise<void> {
  const signature = /Signature=([0-9a-f]+)$/.exec(headers.authorization)?.[1];
  if (signature !== undefined) await redactor.add(signature).ready();
}

/** What a JSON value is, for a message: `a number`, `an object`, `a list`, `true`, `null`. */
function jsonKind(value: unknown): string {
  if (value === null || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/**
 * Credentials that a signature can carry: the access key id goes in the Authorization header and
 * the session token in its own, so each must be sendable there (an integration's key id with a
 * line break was a 500).
 */
function signable(credentials: AwsCredentials): void {
  if (!headerSafe(credentials.accessKeyId)) {
    throw new TestFailure(
      'authentication: the access key id cannot be sent in a header (it holds a space, a control character or a character outside ASCII; AWS key ids are letters and digits)',
    );
  }
  if (credentials.sessionToken !== undefined && credentials.sessionToken !== '' && !headerSafe(credentials.sessionToken)) {
    throw new TestFailure('authentication: the session token cannot be sent in a header (it holds a space, a control character or a character outside ASCII)');
  }
}

async function assumeRole(config: EcrConfig, credentials: AwsCredentials, aws: AwsSettings, ctx: CheckContext): Promise<AwsCredentials> {
  signable(credentials);
  const url = awsEndpoint('sts', config.region, aws);
  url.searchParams.set('Action', 'AssumeRole');
  url.searchParams.set('Version', '2011-06-15');
  // assumeRoleId is the role's name in the registry's account, as StackRox reads it (ecr.go createECRClient).
  url.searchParams.set('RoleArn', `arn:aws:iam::${config.registryId}:role/${config.assumeRoleId!}`);
  url.searchParams.set('RoleSessionName', 'funcrun-image-integration-test');
  if (config.assumeRoleExternalId) url.searchParams.set('ExternalId', config.assumeRoleExternalId);
  const headers = signV4({ method: 'GET', url, region: config.region, service: 'sts', credentials });
  await learnSignature(headers, ctx.redactor);
  const reply = await fetchBounded(url, { headers, signal: ctx.signal, redactor: ctx.redactor }, ctx.limits);
  if (reply.status !== 200) throw awsError('STS AssumeRole', reply, ctx.redactor);
  const text = reply.body.toString('utf8');
  const field = (name: string) => xmlField(text, name);
  const assumed = { accessKeyId: field('AccessKeyId'), secretAccessKey: field('SecretAccessKey'), sessionToken: field('SessionToken') };
  if (!assumed.accessKeyId || !assumed.secretAccessKey) throw new TestFailure('unexpected answer: STS AssumeRole returned no credentials');
  for (const value of Object.values(assumed)) ctx.redactor.add(value);
  await ctx.redactor.ready();
  if (!headerSafe(assumed.accessKeyId) || (assumed.sessionToken !== undefined && !headerSafe(assumed.sessionToken))) {
    throw new TestFailure(
      'unexpected answer: STS AssumeRole returned an access key id or a session token that cannot be sent in a header (it holds a space, a control character or a character outside ASCII)',
    );
  }
  return assumed as AwsCredentials;
}
