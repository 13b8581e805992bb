// Google Container Analysis as a SCANNER, tested as StackRox tests it (pkg/scanners/google): the
// service account's token lists one note of the project. The token comes from Google's OAuth
// token endpoint by a JWT the key signs (RFC 7523), never from the key's own `token_uri`: the
// signed assertion is a credential, and the caller must not choose where it goes.
import { createSign } from 'node:crypto';
import { fetchBounded, headerSafe } from './http';
import { excerpt } from './excerpt';
import { TestFailure, type CheckContext } from './registry';

export interface GoogleSettings {
  /** Google's OAuth 2.0 token endpoint; default https://oauth2.googleapis.com/token */
  tokenEndpoint?: string;
  /** Base URL of the Container Analysis API; default https://containeranalysis.googleapis.com/ */
  containerAnalysisEndpoint?: string;
}

/** Where the service account's token and the notes are asked for unless the operator names others. */
export const GOOGLE_TOKEN_ENDPOINT = 'https://oauth2.googleapis.com/token';
export const CONTAINER_ANALYSIS_ENDPOINT = 'https://containeranalysis.googleapis.com/';

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

interface ServiceAccount {
  client_email: string;
  private_key: string;
  private_key_id?: string;
}

/** Resolves when the service account may list the project's notes; throws TestFailure or NetworkFailure. */
export async function checkGoogleScanner(serviceAccount: string, project: string, google: GoogleSettings, ctx: CheckContext): Promise<string> {
  const account = JSON.parse(serviceAccount) as ServiceAccount;
  const token = await accessToken(account, google, ctx);
  const base = new URL(google.containerAnalysisEndpoint ?? CONTAINER_ANALYSIS_ENDPOINT);
  const url = new URL(`v1beta1/projects/${encodeURIComponent(project)}/notes`, base);
  url.searchParams.set('pageSize', '1');
  const reply = await fetchBounded(url, { headers: { authorization: `Bearer ${token}` }, signal: ctx.signal, redactor: ctx.redactor }, ctx.limits);
  if (reply.status !== 200) {
    const step = reply.status === 401 || reply.status === 403 ? 'authentication' : 'unexpected status';
    throw new TestFailure(`${step}: Container Analysis answered HTTP ${reply.status} listing the notes of project ${project}${excerpt(reply, ctx.redactor)}`);
  }
  return `Container Analysis listed the notes of project ${project}`;
}

async function accessToken(account: ServiceAccount, google: GoogleSettings, ctx: CheckContext): Promise<string> {
  const endpoint = new URL(google.tokenEndpoint ?? GOOGLE_TOKEN_ENDPOINT);
  const now = Math.floor(Date.now() / 1000);
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const unsigned = `${encode({ alg: 'RS256', typ: 'JWT', ...(account.private_key_id ? { kid: account.private_key_id } : {}) })}.${encode({
    iss: account.client_email,
    scope: SCOPE,
    aud: endpoint.href,
    iat: now,
    exp: now + 3600,
  })}`;
  let signature: string;
  try {
    signature = createSign('RSA-SHA256').update(unsigned).sign(account.private_key, 'base64url');
  } catch {
    throw new TestFailure('authentication: the service account private_key is not a usable RSA private key');
  }
  const assertion = `${unsigned}.${signature}`;
  await ctx.redactor.add(assertion).add(signature).ready();
  const body = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString();
  const reply = await fetchBounded(
    endpoint,
    { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, signal: ctx.signal, redactor: ctx.redactor },
    ctx.limits,
  );
  let token: unknown;
  try {
    token = (JSON.parse(reply.body.toString('utf8')) as { access_token?: unknown }).access_token;
  } catch {
    token = undefined;
  }
  if (typeof token === 'string' && token !== '' && !headerSafe(token)) {
    await ctx.redactor.add(token).ready();
    throw new TestFailure(
      "authentication: Google's token endpoint answered with an access token that cannot be sent in a header (it holds a space, a control character or a character outside ASCII)",
    );
  }
  if (reply.status !== 200 || typeof token !== 'string' || token === '') {
    throw new TestFailure(
      `authentication: Google's token endpoint refused the service account ${account.client_email} (HTTP ${reply.status})${excerpt(reply, ctx.redactor)}`,
    );
  }
  await ctx.redactor.add(token).ready();
  return token;
}
