// Media types (RFC 9110 section 8.3.1): type and subtype lowercased, parameters split off,
// names lowercased, quoted values unquoted. Dispatch is on `type`, never on the raw header.

export interface MediaType {
  /** `type/subtype`, lowercase, without parameters. */
  type: string;
  /** The `charset` parameter, lowercase, when present. */
  charset?: string;
  params: Record<string, string>;
}

/** A multipart/form-data body is read by the uploads part (uploads/multipart.ts), loaded for the first one. */
export const MULTIPART = 'multipart/form-data';

const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+\/[!#$%&'*+.^_`|~0-9a-z-]+$/;

// Content types repeat across requests, so parsed results are kept (bounded) and reused.
const cache = new Map<string, MediaType | undefined>();
const CACHE_SIZE = 256;
const MAX_CACHED_LENGTH = 256;

/** Parses a Content-Type value; undefined when absent or not a media type. */
export function parseMediaType(header: string | undefined): MediaType | undefined {
  if (header === undefined || header === '') return undefined;
  // One lookup when the type was seen (most requests): what is not a media type is kept as undefined.
  const cached = cache.get(header);
  if (cached !== undefined || cache.has(header)) return cached;
  return remember(header, parse(header));
}

function remember(header: string, parsed: MediaType | undefined): MediaType | undefined {
  // Only header-sized values are kept: an event's datacontenttype can be as long as its body.
  if (header.length > MAX_CACHED_LENGTH) return parsed;
  if (cache.size >= CACHE_SIZE) cache.clear();
  cache.set(header, parsed);
  return parsed;
}

// A parameter: its name, and its value, quoted (a `;` inside quotes is part of it) or not.
const PARAM = /;\s*([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)/g;

/** How many times a parameter is given: a second `boundary` makes a multipart body ambiguous. */
export function paramCount(header: string, name: string): number {
  let count = 0;
  for (const m of header.matchAll(PARAM)) if (m[1].toLowerCase() === name) count++;
  return count;
}

function parse(header: string): MediaType | undefined {
  const semicolon = header.indexOf(';');
  const type = (semicolon === -1 ? header : header.slice(0, semicolon)).trim().toLowerCase();
  if (!TOKEN.test(type)) return undefined;
  const params: Record<string, string> = Object.create(null);
  if (semicolon !== -1) {
    const re = new RegExp(PARAM);
    re.lastIndex = semicolon;
    for (let m = re.exec(header); m; m = re.exec(header)) {
      let value = m[2].trim();
      if (value.startsWith('"')) value = value.slice(1, -1).replace(/\\(.)/g, '$1');
      params[m[1].toLowerCase()] = value;
    }
  }
  const charset = params.charset?.toLowerCase();
  return charset === undefined ? { type, params } : { type, charset, params };
}

export type BodyKind = 'json' | 'xml' | 'text' | 'form' | 'binary';

/** Which parser a media type gets. */
export function bodyKind(media: MediaType | undefined): BodyKind {
  if (media === undefined) return 'binary';
  const { type } = media;
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  if (type === 'application/xml' || type === 'text/xml' || type.endsWith('+xml')) return 'xml';
  if (type.startsWith('text/')) return 'text';
  if (type === 'application/x-www-form-urlencoded') return 'form';
  return 'binary';
}
