// Endpoints as StackRox accepts them, and which addresses may be contacted.
import { isIP } from 'node:net';

/** An endpoint that does not parse as a URL: refused by StackRox's validateIntegration too. */
export const INVALID_ENDPOINT = 'is not a valid host, host:port or URL';
/** A `%` not followed by two hex digits: Go's url.Parse refuses it ("invalid URL escape"), and so does StackRox. */
export const MALFORMED_ESCAPE = 'has a malformed percent-escape (a % must be followed by two hex digits)';
/** A control character: Go's url.Parse refuses it ("invalid control character in URL"), where WHATWG's drops a tab or newline. */
export const CONTROL_CHARACTER = 'has a control character (a tab, CR or LF, say)';
/** `%31` in a host: Go's url.Parse allows escapes there only of bytes past ASCII (and `%25`), where WHATWG's decodes any. */
export const HOST_ESCAPE = 'has a percent-escape of an ASCII character in its host';

/** Whether `why` (parseEndpoint's) is one of Go's url.Parse: StackRox's validateIntegration refuses those before anything else. */
export function refusedByUrlParse(why: string): boolean {
  return why === INVALID_ENDPOINT || why === MALFORMED_ESCAPE || why === CONTROL_CHARACTER || why === HOST_ESCAPE;
}

/**
 * A registry or scanner address: `host`, `host:port` (https), or `https://` or `http://host[:port][/path]`.
 * The scheme typed is the one used, as StackRox uses it (pkg/urlfmt); `insecure` only turns off
 * certificate verification.
 */
export function parseEndpoint(value: string): URL | string {
  const text = value.trim();
  if (text === '') return 'is required';
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (scheme !== undefined && scheme !== 'http' && scheme !== 'https') return `must be host, host:port, https://host or http://host (not ${scheme}://)`;
  // StackRox's validateIntegration parses every endpoint with Go's url.Parse (pkg/endpoints
  // ValidateEndpoints), which refuses a malformed escape in the host, path or fragment; WHATWG's
  // parser keeps it, and it would reach the SigV4 signer's decoding of the path.
  if (malformedEscape(text)) return MALFORMED_ESCAPE;
  if (hasControlCharacter(text)) return CONTROL_CHARACTER;
  if (asciiEscapeInHost(text, scheme === undefined ? 0 : scheme.length + 3)) return HOST_ESCAPE;
  let url: URL;
  try {
    url = new URL(scheme === undefined ? `https://${text}` : text);
  } catch {
    return INVALID_ENDPOINT;
  }
  if (url.username !== '' || url.password !== '') return 'must not contain credentials; use the username and password fields';
  if (url.search !== '' || url.hash !== '') return 'must not have a query string or fragment';
  if (url.hostname === 'docker.io' || url.hostname === 'index.docker.io') url.hostname = 'registry-1.docker.io';
  url.pathname = withoutTrailingSlashes(url.pathname);
  return url;
}

// A loop, not /\/+$/: that regex tries again from every '/' of a long run that does not end the
// text, so `host//...//a` took time in the square of its length.
function withoutTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 0 && path.charCodeAt(end - 1) === 0x2f) end--;
  return path.slice(0, end);
}

// A `%` not followed by two hex digits outside the query (Go's url.Parse leaves the query's escapes
// to be checked when it is read). A loop, not a regex, over client-sized text.
function malformedEscape(text: string): boolean {
  const query = text.indexOf('?');
  const fragment = text.indexOf('#');
  for (let i = text.indexOf('%'); i !== -1; i = text.indexOf('%', i + 1)) {
    if (query !== -1 && i > query && (fragment === -1 || i < fragment)) continue;
    if (!isHex(text.charCodeAt(i + 1)) || !isHex(text.charCodeAt(i + 2))) return true;
  }
  return false;
}

function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/** A `%` escape of an ASCII byte (its first hex digit under 8), other than `%25`, in the host: from `start` (after `scheme://`) to the path, past any userinfo. */
function asciiEscapeInHost(text: string, start: number): boolean {
  let end = start;
  while (end < text.length && text[end] !== '/' && text[end] !== '?' && text[end] !== '#') end++;
  const at = text.lastIndexOf('@', end - 1);
  for (let i = text.indexOf('%', Math.max(start, at + 1)); i !== -1 && i < end; i = text.indexOf('%', i + 1)) {
    if (text.startsWith('%25', i)) continue;
    const c = text.charCodeAt(i + 1);
    if (c >= 0x30 && c <= 0x37) return true;
  }
  return false;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/**
 * Go's net.SplitHostPort, which StackRox's scanner V4 client checks its addresses with
 * (pkg/scannerv4/client/options.go validateOptions): the port is after the last colon, an IPv6
 * host is bracketed. Its error as Go words it, without the address.
 */
export function splitHostPort(hostport: string): { host: string; port: string } | string {
  const i = hostport.lastIndexOf(':');
  if (i < 0) return 'missing port in address';
  let host: string;
  let j = 0;
  let k = 0;
  if (hostport[0] === '[') {
    const end = hostport.indexOf(']');
    if (end < 0) return "missing ']' in address";
    if (end + 1 === hostport.length) return 'missing port in address';
    if (end + 1 !== i) return hostport[end + 1] === ':' ? 'too many colons in address' : 'missing port in address';
    host = hostport.slice(1, end);
    j = 1;
    k = end + 1;
  } else {
    host = hostport.slice(0, i);
    if (host.includes(':')) return 'too many colons in address';
  }
  if (hostport.indexOf('[', j) >= 0) return "unexpected '[' in address";
  if (hostport.indexOf(']', k) >= 0) return "unexpected ']' in address";
  return { host, port: hostport.slice(i + 1) };
}

/**
 * Why StackRox's validateIntegration refuses an endpoint, before it looks an id up (pkg/endpoints
 * validate(): `localhost`, a loopback address, the metadata service), as this service's policy
 * words it: here for what the name itself says, an address or a metadata name, with `allowPrivate`
 * as the policy applies it; names that resolve to such addresses are refused when resolved.
 */
export function refusedBeforeLookup(hostname: string, allowPrivate: boolean): string | undefined {
  const host = hostname.replace(/^\[|\]$/g, '');
  const byName = refusedName(host);
  if (byName !== undefined) return `endpoint refused: ${byName}`;
  if (isIP(host) !== 0) return refusal(host, host, allowPrivate);
  return host.toLowerCase() === 'localhost' && !allowPrivate ? `endpoint refused: localhost is a loopback name; ${PRIVATE_RULE}` : undefined;
}

/** The operator's switch that lets loopback and unspecified addresses be contacted (for a registry on the same host). */
export const ALLOW_PRIVATE_SETTING = 'IMAGE_INTEGRATION_ALLOW_PRIVATE_ENDPOINTS';
const PRIVATE_RULE = `loopback and unspecified addresses are contacted only with ${ALLOW_PRIVATE_SETTING}=true`;

/**
 * Why `address` (what `host` resolved to) is not contacted, in the answer's words, or undefined:
 * what the operator's switch allows is said with the switch; what it never allows is said so.
 */
export function refusal(host: string, address: string, allowPrivate: boolean): string | undefined {
  const why = refusedAddress(address, allowPrivate);
  if (why === undefined) return undefined;
  const rule = refusedAddress(address, true) === undefined ? PRIVATE_RULE : 'link-local and metadata addresses are never contacted';
  // `x resolves to 169.254.169.254, which is a link-local address`; an IPv4-mapped address is named, then the address inside it.
  const said =
    host === address
      ? why
      : why.startsWith(`${address} is `)
        ? `${host} resolves to ${address}, which ${why.slice(address.length + 1)}`
        : `${host} resolves to ${address}: ${why}`;
  return `endpoint refused: ${said}; ${rule}`;
}

/**
 * Whether a redirect is followed. On the same origin, always. From http to https on the same host
 * name, when the request carries no credentials (no Authorization header): StackRox's registry
 * client follows any redirect (Go's http.Client, stackrox/docker-registry-client), and an upgrade
 * to TLS on the host the user named exposes nothing. Any other redirect is refused, so that
 * credentials never go to another origin.
 */
export function followsRedirect(from: URL, to: URL, headers: Record<string, string> | undefined): boolean {
  if (to.origin === from.origin) return true;
  const credentials = Object.keys(headers ?? {}).some((name) => name.toLowerCase() === 'authorization');
  return from.protocol === 'http:' && to.protocol === 'https:' && to.hostname === from.hostname && !credentials;
}

const GRPC_PATH = 'must be host:port, without a path';

/** `host:port` for a gRPC endpoint (clairify's node scanner, scanner V4), with or without a scheme. */
export function parseHostPort(value: string, defaultPort: number): { host: string; port: number } | string {
  const parsed = parseEndpoint(value);
  if (typeof parsed === 'string') return parsed;
  // A gRPC target has no path; read as a URL's, one would take what follows it from the authority
  // (`127.0.0.1/x:1` is 127.0.0.1 on the default port), and another port than the one named be dialled.
  if (parsed.pathname !== '/') return GRPC_PATH;
  const port = parsed.port === '' ? defaultPort : Number(parsed.port);
  return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port };
}

/**
 * Cloud instance metadata services: they hand out the instance's own credentials, so a caller
 * must never make this service fetch from them. The one list, by provider. Addresses in
 * 169.254.0.0/16 (AWS, Azure, Google, OpenStack, DigitalOcean, Oracle OCI, Tencent 169.254.0.23)
 * are refused as link-local below; these are the ones outside it.
 */
const METADATA_ADDRESSES: Record<string, string> = {
  '100.100.100.200': 'Alibaba Cloud',
  '192.0.0.192': 'Oracle Cloud (Classic)',
  'fd00:ec2::254': 'AWS (IPv6)',
  'fd20:ce::254': 'Google Cloud (IPv6)',
};
const METADATA_HOSTS = new Set([
  'metadata.google.internal', // Google Cloud
  'metadata', // Google Cloud, short name
  'instance-data', // AWS
  'instance-data.ec2.internal', // AWS
  'metadata.tencentyun.com', // Tencent Cloud
  'metadata.platformequinix.com', // Equinix Metal
]);

/** Why a host name may not be contacted before it is even resolved, or undefined. */
export function refusedName(hostname: string): string | undefined {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (METADATA_HOSTS.has(name)) return `${name} is a cloud metadata service`;
  return undefined;
}

/**
 * Why an address may not be contacted, or undefined. Link-local and cloud metadata addresses are
 * never contacted: they hand out the instance's credentials. Loopback and the unspecified address
 * are allowed only with `allowPrivate` (the operator's switch, for registries on the same host).
 */
export function refusedAddress(address: string, allowPrivate = false): string | undefined {
  const why = refusedAny(address);
  if (why === undefined || !allowPrivate) return why;
  return PRIVATE_ONLY.test(why) ? undefined : why;
}

// The refusals the operator's switch lifts.
const PRIVATE_ONLY = / is (a loopback|the unspecified) address$/;

// Where a NAT64 prefix of /48, /56, /64 and /96 puts the IPv4 address's bytes, and the bytes it
// leaves zero (RFC 6052 section 2.2).
const NAT64_FORMS = [
  { v4: [6, 7, 9, 10], zero: [8, 11, 12, 13, 14, 15] },
  { v4: [7, 9, 10, 11], zero: [8, 12, 13, 14, 15] },
  { v4: [9, 10, 11, 12], zero: [8, 13, 14, 15] },
  { v4: [12, 13, 14, 15], zero: [8, 9, 10, 11] },
];

function refusedAny(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) return refusedV4(address);
  if (family !== 6) return undefined;
  const bytes = ipv6Bytes(address);
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  // IPv4 inside IPv6, which a translator or relay on the way may deliver to that IPv4 address:
  // mapped (::ffff:a.b.c.d), compatible (::a.b.c.d), translated (::ffff:0:a.b.c.d, RFC 2765),
  // NAT64 (64:ff9b::a.b.c.d), 6to4 (2002:aabb:ccdd::/48, RFC 3056).
  const v4 = bytes.slice(12).join('.');
  if (zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return refusedV4(v4);
  if (zeros(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zeros(10, 12)) return refusedV4(v4);
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12)) return refusedV4(v4);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return refusedV4(bytes.slice(2, 6).join('.'));
  // NAT64's local-use prefix (64:ff9b:1::/48, RFC 8215): a network's own translator, whose prefix
  // may be /48, /56, /64 or /96 within it. The IPv4 address is read in each form the address fits
  // (RFC 6052 section 2.2: byte 8 and the suffix zero); a refusal no setting lifts comes first.
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && bytes[4] === 0 && bytes[5] === 1) {
    const reasons = NAT64_FORMS.filter((form) => form.zero.every((i) => bytes[i] === 0)).flatMap((form) => refusedV4(form.v4.map((i) => bytes[i]).join('.')) ?? []);
    return reasons.find((why) => !PRIVATE_ONLY.test(why)) ?? reasons[0];
  }
  if (zeros(0, 15) && bytes[15] === 1) return `${address} is a loopback address`;
  if (zeros(0, 16)) return `${address} is the unspecified address`;
  if (zeros(0, 12)) return refusedV4(v4);
  if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0x80) return `${address} is a link-local address`;
  const canonical = canonicalV6(bytes);
  const provider = METADATA_ADDRESSES[canonical];
  if (provider !== undefined) return `${address} is a cloud metadata service (${provider})`;
  return undefined;
}

// The 16 bytes of an IPv6 address (already known to be valid), `::` and a dotted tail included.
function ipv6Bytes(address: string): number[] {
  // Index scans rather than /%.*$/ and /(\d+\.\d+\.\d+\.\d+)$/, which retry from every '%' or digit.
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone !== -1) text = text.slice(0, zone);
  const lastColon = text.lastIndexOf(':');
  const lastGroup = text.slice(lastColon + 1);
  if (lastGroup.includes('.')) {
    const [a, b, c, d] = lastGroup.split('.').map(Number);
    text = text.slice(0, lastColon + 1) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return groups.flatMap((group) => {
    const n = parseInt(group, 16);
    return [n >> 8, n & 0xff];
  });
}

// The compressed lowercase form (RFC 5952) of 16 bytes, so `fd00:0ec2:0:0::0254` is found too.
function canonicalV6(bytes: number[]): string {
  const groups = Array.from({ length: 8 }, (_, i) => ((bytes[2 * i] << 8) | bytes[2 * i + 1]).toString(16));
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLength) [best, bestLength] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  if (best === -1) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLength).join(':')}`;
}

function refusedV4(address: string): string | undefined {
  const provider = METADATA_ADDRESSES[address];
  if (provider !== undefined) return `${address} is a cloud metadata service (${provider})`;
  const [a, b] = address.split('.').map(Number);
  if (a === 127) return `${address} is a loopback address`;
  if (a === 169 && b === 254) return `${address} is a link-local address (cloud metadata)`;
  if (a === 0) return `${address} is the unspecified address`;
  return undefined;
}
