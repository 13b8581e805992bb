// The ImageIntegration resource (stackrox proto/storage/image_integration.proto) and the
// UpdateImageIntegrationRequest around it (proto/api/v1/image_integration_service.proto), as a
// JSON-Schema-shaped tree that request-decode.ts reads with protojson's rules. Secret fields carry
// `secret: true` (the proto's `scrub:"always"` fields); everything that masks (secrets.ts) is
// derived from it, so a secret field added here cannot be forgotten there.
//
// Every string has a `maxLength`; the bound and its reason are given where the field is declared.
// Lengths count UTF-16 code units (JavaScript's `length`).

export const CATEGORIES = ['REGISTRY', 'SCANNER', 'NODE_SCANNER'] as const;
export type Category = (typeof CATEGORIES)[number];

export interface SchemaNode {
  type: 'string' | 'boolean' | 'integer' | 'array' | 'object';
  secret?: boolean;
  maxLength?: number;
  /** `int32` for integers; `date-time` for a google.protobuf.Timestamp. */
  format?: 'int32' | 'date-time';
  /** For `categories`: an enum list. */
  items?: { enum: readonly string[] };
  maxItems?: number;
  properties?: Record<string, SchemaNode>;
  /** The proto field name of each property whose name differs from its JSON name. */
  protoNames?: Record<string, string>;
  /** The members of the message's oneof, when it has one. */
  oneof?: readonly string[];
}

const KiB = 1024;

const text = (maxLength: number): SchemaNode => ({ type: 'string', maxLength });
const secret = (maxLength: number): SchemaNode => ({ type: 'string', secret: true, maxLength });
const boolean: SchemaNode = { type: 'boolean' };
const int32: SchemaNode = { type: 'integer', format: 'int32' };

// An endpoint is a URL or host[:port]: 2048 is the URL length browsers, proxies and registries
// all accept; a registry address is far shorter.
const endpoint = text(2048);
// A registry user name: Quay robot names (`org+name`) are at most 255; Docker Hub, Harbor, ACR
// and IBM names are shorter. 1 KiB leaves room for federated (e-mail like) names.
const username = text(KiB);
// Passwords, tokens and API keys: registry passwords are short, but tokens used as passwords
// (Azure ACR refresh tokens, ECR authorization tokens, JWTs with many claims) reach a few KiB.
const password = secret(16 * KiB);
// A Kubernetes or StackRox UUID (36 characters), with room for other identifier forms.
const uuid = text(64);
// Kubernetes object names (namespace, secret name) are DNS subdomains: at most 253.
const k8sName = text(253);

function message(properties: Record<string, SchemaNode>, extra: Partial<SchemaNode> = {}): SchemaNode {
  // protojson accepts a field by its JSON name or its proto name; protoc derives the JSON name
  // by dropping each `_` and capitalizing the next letter, so the proto name is the JSON name
  // with an `_` before each capital, except where the proto name itself is camelCase (listed).
  const protoNames: Record<string, string> = {};
  for (const name of Object.keys(properties)) {
    const proto = extra.protoNames?.[name] ?? name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    if (proto !== name) protoNames[name] = proto;
  }
  return { type: 'object', properties, ...extra, protoNames };
}

/** The configuration messages, by the ImageIntegration field (oneof IntegrationConfig member) that holds each. */
export const CONFIGS = {
  docker: message({ endpoint, username, password, insecure: boolean }),
  quay: message(
    {
      endpoint,
      oauthToken: password,
      insecure: boolean,
      registryRobotCredentials: message({ username, password }),
    },
    // `string oauthToken = 2;` is camelCase in the proto: `oauth_token` is no name of it.
    { protoNames: { oauthToken: 'oauthToken' } },
  ),
  ecr: message({
    // An AWS account id is 12 digits (validate.ts checks the form).
    registryId: text(64),
    // AWS documents access key ids as 16 to 128 characters.
    accessKeyId: secret(128),
    // AWS secret access keys are 40 characters.
    secretAccessKey: secret(256),
    // AWS region names (`ap-southeast-2`) are short.
    region: text(64),
    useIam: boolean,
    endpoint,
    useAssumeRole: boolean,
    // A role name is at most 64 characters; an ARN (which the service also takes) at most 2048.
    assumeRoleId: text(2048),
    // STS AssumeRole's ExternalId is at most 1224 characters.
    assumeRoleExternalId: text(1224),
    authorizationData: message({
      username,
      // The password of an ECR authorization token is a few KiB.
      password: secret(16 * KiB),
      // An RFC 3339 timestamp is at most 35 characters (nanoseconds and an offset).
      expiresAt: { type: 'string', format: 'date-time', maxLength: 64 },
    }),
  }),
  google: message({
    endpoint,
    // A service account JSON key is about 2.3 KiB (its RSA private key is most of it); external
    // account (workload identity federation) files are smaller. 64 KiB holds any real one.
    serviceAccount: secret(64 * KiB),
    // GCP project ids are 6 to 30 characters.
    project: text(128),
    wifEnabled: boolean,
  }),
  azure: message({ endpoint, username, password, wifEnabled: boolean }),
  // IBM Cloud API keys are 44 characters.
  ibm: message({ endpoint, apiKey: secret(KiB) }),
  clairify: message({ endpoint, grpcEndpoint: endpoint, numConcurrentScans: int32 }),
  scannerV4: message({ numConcurrentScans: int32, indexerEndpoint: endpoint, matcherEndpoint: endpoint }),
  clair: message({ endpoint, insecure: boolean }),
  clairV4: message({ endpoint, insecure: boolean }),
} as const satisfies Record<string, SchemaNode>;

export type ConfigName = keyof typeof CONFIGS;
export const CONFIG_NAMES = Object.keys(CONFIGS) as ConfigName[];

/** storage.ImageIntegration. */
export const schema: SchemaNode = message(
  {
    id: uuid,
    // Integration names are shown in lists; StackRox has no bound, 256 is far above real ones.
    name: text(256),
    // The longest known type is `artifactregistry` (16); 64 leaves room for a clear error.
    type: text(64),
    // A list of ImageIntegrationCategory: 3 values; the UI sends at most 2. 16 allows repeats.
    categories: { type: 'array', items: { enum: CATEGORIES }, maxItems: 16 },
    ...CONFIGS,
    autogenerated: boolean,
    clusterId: uuid,
    skipTestIntegration: boolean,
    source: message({ clusterId: uuid, namespace: k8sName, imagePullSecretName: k8sName }),
  },
  { oneof: CONFIG_NAMES },
);

/** v1.UpdateImageIntegrationRequest: the body of POST /v1/imageintegrations/test/updated. */
export const updateSchema: SchemaNode = message(
  { config: schema, updatePassword: boolean },
  // `bool updatePassword = 2;` is camelCase in the proto: `update_password` is no name of it.
  { protoNames: { updatePassword: 'updatePassword' } },
);

/** The JSON paths (as key lists) of every field marked `secret` in `node`. */
/** The longest value a secret field may hold: google.serviceAccount's 64 KiB. */
export function longestSecret(node: SchemaNode = schema): number {
  if (node.secret === true) return node.maxLength ?? 0;
  return Math.max(0, ...Object.values(node.properties ?? {}).map((child) => longestSecret(child)));
}

export function secretPaths(node: SchemaNode = schema, at: string[] = []): string[][] {
  if (node.secret === true) return [at];
  if (node.properties === undefined) return [];
  return Object.entries(node.properties).flatMap(([key, child]) => secretPaths(child, [...at, key]));
}
