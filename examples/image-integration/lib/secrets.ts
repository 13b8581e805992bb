// Keeping secrets in: masking the request's secret fields (for logs) and redacting any secret
// value, in the forms it travels in, from every text that leaves (responses, errors, logs).
import { schema } from './schema';
import { alignedForms, base64Forms, base64Length, encodingForms, encodingsLength, joinedForm, textForms } from './forms';
import { foldString, folded, isSpace, Matcher, mergeSpans, sortSpans } from './matcher';
import { inOriginal, joinedView, views, without } from './views';

export const MASK = '******';

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  secret?: boolean;
}

type Holder = Record<string, unknown>;

interface Visitor {
  /** A value that must not be shown: a `secret` field, an unknown field, or a value where an object belongs. */
  hidden(holder: Holder, key: string, node: SchemaNode | undefined): void;
  /** An endpoint field (`endpoint`, `grpcEndpoint`, ...): it may carry userinfo. */
  endpoint(holder: Holder, key: string): void;
}

const isEndpointField = (key: string) => key.length >= 8 && key.slice(-8).toLowerCase() === 'endpoint';

/**
 * Walks a request body beside the schema and calls `hidden` for each value that must not be
 * shown: the fields the schema marks `secret`, fields the schema does not know (a mistyped
 * `pasword` holds a password just the same), and anything but an object where the schema has an
 * object (`"docker": "{\"password\": ...}"`, a configuration sent as a JSON string).
 */
function walk(value: unknown, node: SchemaNode | undefined, visitor: Visitor): void {
  if (value === null || typeof value !== 'object' || node?.properties === undefined) return;
  const holder = value as Holder;
  for (const key of Object.keys(holder)) {
    const child = Object.hasOwn(node.properties, key) ? node.properties[key] : undefined;
    const v = holder[key];
    if (child === undefined || child.secret === true) visitor.hidden(holder, key, child);
    else if (child.properties !== undefined && v !== null && v !== undefined && typeof v !== 'object') visitor.hidden(holder, key, child);
    else if (typeof v === 'string' && isEndpointField(key)) visitor.endpoint(holder, key);
    else walk(v, child, visitor);
  }
}

/** A copy of the request body with every secret (and unknown) field replaced by `******`, and userinfo in endpoints masked. */
export function maskSecrets(body: unknown): unknown {
  const copy = structuredClone(body);
  walk(copy, schema as SchemaNode, {
    hidden(holder, key) {
      if (holder[key] !== '' && holder[key] !== null && holder[key] !== undefined) holder[key] = MASK;
    },
    endpoint(holder, key) {
      holder[key] = maskEndpoint(holder[key] as string);
    },
  });
  return copy;
}

// Bounds on reading JSON out of strings: the size of one string, how deep strings nest in strings,
// and how many characters are parsed in all (so a request cannot make this quadratic).
const MAX_JSON_STRING = 256 * 1024;
const MAX_JSON_NESTING = 3;
const MAX_JSON_BUDGET = 4 * 1024 * 1024;

/** Field names that hold secrets whatever object they are in (inside a JSON string, say). */
const SECRET_NAME = /pass|pwd|secret|token|key|serviceaccount|private|session|signature|bearer|cookie|^auths?$|^authorization$|credential/i;

/** The string values of the request's secret (and unknown) fields, userinfo in its endpoints, and secret-named fields of JSON held in strings. */
export function secretValues(body: unknown): string[] {
  // The declared secret fields first: the Redactor knows the first secrets in more forms (Redactor.add).
  const declared: string[] = [];
  const values: string[] = [];
  let budget = MAX_JSON_BUDGET;
  const parseJson = (text: string): unknown => {
    const trimmed = text.trim();
    const first = trimmed.charCodeAt(0);
    if (first !== 0x7b && first !== 0x5b) return undefined; // { [
    if (trimmed.length > MAX_JSON_STRING || trimmed.length > budget) return undefined;
    budget -= trimmed.length;
    try {
      return JSON.parse(trimmed);
    } catch {
      return undefined;
    }
  };
  // Every string (and number, boolean) under `value`; JSON held in those strings is read too.
  const all = (value: unknown, nesting: number): void => {
    const stack = [value];
    while (stack.length > 0) {
      const v = stack.pop();
      if (typeof v === 'string') {
        if (v !== '') values.push(v);
        if (nesting < MAX_JSON_NESTING) named(parseJson(v), nesting + 1);
      } else if (typeof v === 'number' || typeof v === 'boolean') values.push(String(v));
      else if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push(child);
    }
  };
  // The secret-named fields anywhere under `value`, and JSON held in its strings.
  const named = (value: unknown, nesting: number): void => {
    const stack = [value];
    while (stack.length > 0) {
      const v = stack.pop();
      if (typeof v === 'string') {
        if (nesting < MAX_JSON_NESTING) named(parseJson(v), nesting + 1);
      } else if (Array.isArray(v)) for (const child of v) stack.push(child);
      else if (v !== null && typeof v === 'object') {
        for (const [key, child] of Object.entries(v)) {
          if (SECRET_NAME.test(key)) all(child, nesting);
          else stack.push(child);
        }
      }
    }
  };
  const visitor = (nesting: number): Visitor => ({
    hidden(holder, key, node) {
      const v = holder[key];
      const parsed = node?.properties !== undefined && typeof v === 'string' && nesting < MAX_JSON_NESTING ? parseJson(v) : undefined;
      // A configuration sent as a JSON string: its fields as the schema sees them.
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
        walk(parsed, node, visitor(nesting + 1));
        named(parsed, nesting + 1);
      } else if (node?.secret === true && typeof v === 'string') {
        if (v !== '') declared.push(v);
        if (nesting < MAX_JSON_NESTING) named(parseJson(v), nesting + 1);
      } else all(v, nesting);
    },
    endpoint(holder, key) {
      values.push(...endpointSecrets(holder[key] as string));
    },
  });
  walk(body, schema as SchemaNode, visitor(0));
  // JSON held in any string of the request (a name, a category, a field of the wrong type).
  const stack = [body];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') named(parseJson(v), 1);
    else if (v !== null && typeof v === 'object') for (const child of Object.values(v)) stack.push(child);
  }
  return [...new Set([...declared, ...values])];
}

const isLetter = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
const isSchemeChar = (c: number) => isLetter(c) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2e || c === 0x2d; // 0-9 + . -

/**
 * Where the userinfo of an endpoint value is, as [start, end) before its last `@`: after `scheme://`
 * or `//` when it has one, else from its start (`user:pw@host`, `https:user:pw@host`). The whole
 * value is one endpoint, so a password may hold spaces, `/` and `@`. Undefined without an `@`.
 */
function endpointUserinfo(value: string): [number, number] | undefined {
  const at = value.lastIndexOf('@');
  if (at <= 0) return undefined;
  let start = 0;
  while (start < at && isSpace(value.charCodeAt(start))) start++;
  let i = start;
  while (i < at && isSchemeChar(value.charCodeAt(i))) i++;
  if (i > start && isLetter(value.charCodeAt(start)) && value.startsWith('://', i) && i + 3 <= at) start = i + 3;
  else if (value.startsWith('//', start)) start += 2;
  return start < at ? [start, at] : undefined;
}

/** An endpoint with its userinfo masked, in every form: `https://******@host`, `******@host`, `//******@host`. */
export function maskEndpoint(value: string): string {
  const span = endpointUserinfo(value);
  return span === undefined ? value : `${value.slice(0, span[0])}${MASK}${value.slice(span[1])}`;
}

/** The secrets in an endpoint's userinfo: the userinfo, the password, and their percent-decoded forms. */
export function endpointSecrets(value: string): string[] {
  const span = endpointUserinfo(value);
  if (span === undefined) return [];
  let userinfo = value.slice(span[0], span[1]);
  const out = [userinfo];
  // `https:user:pw`: the scheme without its slashes is no part of the credentials.
  const scheme = /^[a-z][a-z0-9+.-]{0,30}:/i.exec(userinfo)?.[0];
  if (scheme !== undefined && userinfo.indexOf(':', scheme.length) !== -1) userinfo = userinfo.slice(scheme.length);
  const colon = userinfo.indexOf(':');
  if (colon !== -1 && colon + 1 < userinfo.length) out.push(userinfo.slice(colon + 1));
  for (const text of [...out]) {
    try {
      const decoded = decodeURIComponent(text);
      if (decoded !== text) out.push(decoded);
    } catch {
      // not percent-encoded
    }
  }
  return out;
}

/**
 * Masks the userinfo of every URL in the text (`scheme://user:password@host` to `scheme://******@host`),
 * as `text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1******@')` would, in one pass. That
 * regex retries the scheme from each letter of a long word and the userinfo from each scheme before
 * it, so its time grows with the square of the text (a 156 KiB username held the service for 30 s).
 * Here each `://` is looked at once, and the characters scanned around one are never scanned again:
 * a scheme has no `:` or `/`, and a userinfo no `/`. (The Redactor masks more forms: `userinfoSpans`.)
 */
export function maskUserinfo(text: string): string {
  let out = '';
  let copied = 0; // text before this index is in `out`
  for (let at = text.indexOf('://'); at !== -1; at = text.indexOf('://', at + 1)) {
    // The scheme: from the first letter of the run of scheme characters that ends at `://`.
    let start = at;
    while (start > copied && isSchemeChar(text.charCodeAt(start - 1))) start--;
    while (start < at && !isLetter(text.charCodeAt(start))) start++;
    if (start === at) continue;
    // The userinfo: everything up to an '@' that comes before any white space or '/'.
    let end = at + 3;
    while (end < text.length && !isSpace(text.charCodeAt(end)) && text.charCodeAt(end) !== 0x2f && text.charCodeAt(end) !== 0x40) end++;
    if (end === text.length || text.charCodeAt(end) !== 0x40) continue;
    out += `${text.slice(copied, at + 3)}${MASK}@`;
    copied = end + 1;
    at = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

// Where a word that may hold userinfo ends: white space, quotes and brackets (as in JSON or HTML).
const isWordEnd = (c: number) =>
  isSpace(c) ||
  c === 0x22 ||
  c === 0x27 ||
  c === 0x60 ||
  c === 0x3c ||
  c === 0x3e ||
  c === 0x28 ||
  c === 0x29 ||
  c === 0x5b ||
  c === 0x5d ||
  c === 0x7b ||
  c === 0x7d;

/**
 * The userinfo in free text, in every form, as [start, end) pairs: in each word (up to white space,
 * a quote or a bracket), what comes before its last `@`, after `scheme://` or `//`, or from the word's
 * start when that holds a `:` (`user:pw@host`, `https:user:pw@host`). So a password with `/` or `@`
 * is masked whole. One pass: each character is looked at once. (A password with a space is a known
 * secret when it came in an endpoint: `secretValues` collects it.)
 */
export function userinfoSpans(text: string): number[] {
  const spans: number[] = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    while (i < n && isWordEnd(text.charCodeAt(i))) i++;
    const start = i;
    let lastAt = -1;
    let colonBeforeAt = -1; // the last ':' before lastAt
    let lastColon = -1;
    let separator = -1; // the first '://'
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (isWordEnd(c)) break;
      if (c === 0x40) {
        lastAt = i;
        colonBeforeAt = lastColon;
      } else if (c === 0x3a) {
        lastColon = i;
        if (separator === -1 && text.charCodeAt(i + 1) === 0x2f && text.charCodeAt(i + 2) === 0x2f) separator = i;
      }
    }
    if (lastAt <= start) continue;
    let from = start;
    let strong = false;
    if (separator !== -1 && separator + 3 <= lastAt) {
      from = separator + 3;
      strong = true;
    } else if (text.charCodeAt(start) === 0x2f && text.charCodeAt(start + 1) === 0x2f) {
      from = start + 2;
      strong = true;
    }
    if (from < lastAt && (strong || colonBeforeAt >= from)) spans.push(from, lastAt);
  }
  return spans;
}

/** Forms of a secret shorter than this many characters are masked only where they stand alone. */
const SHORT_FORM = 4;

// Letters, digits and '_', folded: what a short secret may not touch to be itself.
const isWordCode = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c > 0x7f;

function standsAlone(codes: Uint16Array, start: number, end: number): boolean {
  return (start === 0 || !isWordCode(codes[start - 1])) && (end === codes.length || !isWordCode(codes[end]));
}

/** Forms in the white-space-free search shorter than this are left out: joining words must not make them. */
const JOINED_FORM = 8;

/**
 * Characters of forms a test's secrets are known in beyond themselves (their base64, their other
 * text forms, their base64 at any alignment, hex, UTF-16 and Latin-1), in all: what a matcher is
 * built over, at tens of nanoseconds a character (130 before the code is compiled). It holds every
 * form of the secrets a real test has (a service account of a few KiB, its key line by line, its
 * Basic credentials, an assertion, a token: 200,000 characters with the secrets themselves) and
 * keeps a test's building under some 100 ms whatever its secrets: 64 KiB of U+FDFA in a service
 * account was 2.4 million characters (NFKC writes it as 18), made in 0.5 s and built in a turn of
 * 0.4 s.
 */
const FORMS_BUDGET = 512 * 1024;
/** A text form (case, normalisation) is left out when longer than this many times its secret: every canonical decomposition fits (4 at most), U+FDFA's 18 does not. */
const TEXT_GROWTH = 4;
/** Bytes of secrets known in the aligned base64 forms (three more strings a third longer than the secret's bytes). */
const ALIGNED_BUDGET = 64 * 1024;
/**
 * Bytes of secrets known in the hex, UTF-16 and Latin-1 forms (some twelve times the secret's
 * length, the most of any): 8 KiB holds a password, the Basic credentials made of it and a token
 * received (a few KiB each, ECR's and Azure's included). A secret of the largest size a password
 * may have (16 KiB) gets none: its forms would be 200,000 characters of matcher, built per test.
 */
const ENCODINGS_BUDGET = 8 * 1024;

type Kind = 'values' | 'short' | 'joined';
const KINDS: readonly Kind[] = ['values', 'short', 'joined'];

/** Forms of one kind each: the plain and byte forms, those shorter than SHORT_FORM, the white-space-free search. */
type FormLists = Record<Kind, string[]>;

/** The matchers over the forms added up to some point: `size` characters of forms in all. */
interface Generation {
  forms: FormLists;
  size: number;
  matchers: Partial<Record<Kind, Matcher>>;
}

const noForms = (): FormLists => ({ values: [], short: [], joined: [] });

/**
 * Work that waits its turn: one piece per turn of the event loop, each in a setImmediate queued
 * when the one before it is done, so between two pieces the loop polls once (a liveness probe is
 * answered, a connection is made). Tests that start together build their matchers one by one so.
 */
class Turns {
  #last: Promise<unknown> = Promise.resolve();

  take<T>(work: () => T): Promise<T> {
    const turn = this.#last.then(
      () =>
        new Promise<T>((resolve, reject) =>
          setImmediate(() => {
            try {
              resolve(work());
            } catch (err) {
              reject(err);
            }
          }),
        ),
    );
    this.#last = turn.catch(() => undefined);
    return turn;
  }
}

const buildTurns = new Turns();

/**
 * Replaces secrets in text. Each secret is known in the forms it may come back in: as it is, in any
 * case, JSON-escaped (Go's `\u0026` too), percent-encoded (upper or lower case, `+` for a space),
 * `\x`-escaped, as HTML references, in base64 and base64url (alone or inside a longer encoded text,
 * on one line or wrapped), in hex (either case, alone or spaced), as UTF-16 (LE or BE) bytes, and
 * (added by the code that sends them) the Basic credentials and tokens made from it. A service
 * account's private key is also known line by line, in case a peer quotes a part. Userinfo in URLs
 * and `user:pw@host` is masked too. Every character that is part of some secret is masked:
 * overlapping secrets become one `******`.
 *
 * Adding a secret only notes it: its forms are made, and matchers built over them, in turns of the
 * event loop of their own (ready), or when a text is redacted before that. The forms beyond each
 * secret itself come out of one budget (FORMS_BUDGET), so no secret, however it grows when
 * rewritten, costs a test more than that. Secrets are added along a test (its Basic credentials, a
 * token received): the forms added since the last matchers were built get matchers of their own,
 * merged with the last ones while those are no bigger, so a form is built into a matcher a few
 * times in all, not once per addition.
 */
export class Redactor {
  // Every form known, by kind: a form added again costs nothing.
  readonly #known: Record<Kind, Set<string>> = { values: new Set(), short: new Set(), joined: new Set() };
  // Secrets added, and those whose forms are still to be made; texts known as they are only, still to be learned.
  readonly #added = new Set<string>();
  #queued: string[] = [];
  #asIs: string[] = [];
  #pending = noForms();
  #pendingSize = 0;
  // A generation whose matchers are being built, one per turn; the generations it merges are out of #generations meanwhile.
  #building: Generation | undefined;
  readonly #generations: Generation[] = [];
  // Characters of forms still to be made (FORMS_BUDGET); bytes of secrets still known in the aligned base64 forms, and in the other encodings.
  #formsBudget = FORMS_BUDGET;
  #alignedBudget = ALIGNED_BUDGET;
  #encodingsBudget = ENCODINGS_BUDGET;

  constructor(values: Iterable<string> = []) {
    for (const value of values) this.add(value);
  }

  /** A secret, to be known in every form it travels in (within the budgets); the first added get the most. */
  add(value: string | undefined): this {
    if (value === undefined || value === '' || this.#added.has(value)) return this;
    this.#added.add(value);
    this.#queued.push(value);
    return this;
  }

  /**
   * A text known as it is only (in any case, and through the decoded views), not in encodings of
   * its own: a value of an ignored field (a mistyped `pasword`), which is never sent to a peer so
   * no peer can quote it encoded; the Basic credentials as their header carries them, masked
   * whatever is left of the budget.
   */
  addAsIs(value: string): this {
    if (value !== '') this.#asIs.push(value);
    return this;
  }

  /**
   * Resolves once the matchers over every form added so far are built: the forms made in a turn of
   * the event loop of their own, then each matcher in one of its own (Turns), so that a test's
   * first build, of the request's secrets, its largest, leaves room for a liveness probe or a
   * connection, and so do tests that start together.
   */
  async ready(): Promise<void> {
    while (this.#working()) await buildTurns.take(() => this.#step());
  }

  #working(): boolean {
    return this.#queued.length > 0 || this.#asIs.length > 0 || this.#pendingSize > 0 || this.#building !== undefined;
  }

  /** One piece of what is left to do: the forms of what was added made, or one matcher built. */
  #step(): void {
    if (this.#queued.length > 0 || this.#asIs.length > 0) this.#makeForms();
    else if (this.#building !== undefined || this.#pendingSize > 0) this.#buildOne();
  }

  /** The matchers over every form added, the work left done now. */
  #matchers(): Generation[] {
    while (this.#working()) this.#step();
    return this.#generations;
  }

  #learn(kind: Kind, form: string): number {
    if (form === '' || this.#known[kind].has(form)) return 0;
    this.#known[kind].add(form);
    this.#pending[kind].push(form);
    this.#pendingSize += form.length;
    return form.length;
  }

  /** A form of the secret's text (itself, another case or normalisation); those shorter than SHORT_FORM are masked only where they stand alone. */
  #text(form: string): number {
    return this.#learn(form.length < SHORT_FORM ? 'short' : 'values', foldString(form));
  }

  /** Its bytes read as text (UTF-16's, UTF-8's as Latin-1): a short secret's are masked only where they stand alone. */
  #bytes(form: string, secret: string): number {
    return this.#learn(secret.length < SHORT_FORM || form.length < SHORT_FORM ? 'short' : 'values', foldString(form));
  }

  /** An encoding (base64, hex): in the white-space-free search, where base64 wrapped over lines and hex spaced by bytes are found; a short one as `bytes` are. */
  #encoded(form: string, secret: string): number {
    if (secret.length >= SHORT_FORM && form.length >= JOINED_FORM) return this.#learn('joined', joinedForm(form));
    return this.#bytes(form, secret);
  }

  /**
   * Makes the forms of the secrets added since the last time, each kind of form for every secret
   * before the next kind, so that what is left of FORMS_BUDGET goes to the forms that tell the
   * most: each secret as it is (and split over lines or spaced out) always, then its base64 (what
   * Basic credentials travel in), its other text forms (each at most TEXT_GROWTH times its length),
   * its base64 at any alignment (the first ALIGNED_BUDGET bytes of secrets), and its hex, UTF-16
   * and Latin-1 forms (the first ENCODINGS_BUDGET bytes). A kind's forms are made for a secret
   * only when their size, known or measured beforehand, fits in what is left.
   */
  #makeForms(): void {
    for (const value of this.#asIs) this.#text(value);
    this.#asIs = [];
    const values = this.#queued;
    this.#queued = [];
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      this.#text(value);
      // Split over lines, or spaced out letter by letter: the secret itself in the white-space-free search.
      const joined = value.length < SHORT_FORM ? '' : joinedForm(value);
      if (joined.length >= JOINED_FORM) this.#learn('joined', joined);
      // A service account's private key, line by line: secrets of their own, after the others.
      if (!value.trimStart().startsWith('{')) continue;
      for (const line of this.#serviceAccountLines(value)) {
        if (this.#added.has(line)) continue;
        this.#added.add(line);
        values.push(line);
      }
    }
    const bytes = values.map((value) => Buffer.from(value, 'utf8'));
    const spend = (size: number) => (this.#formsBudget = Math.max(0, this.#formsBudget - size));
    values.forEach((value, i) => {
      if (2 * base64Length(bytes[i].length) > this.#formsBudget) return;
      for (const form of base64Forms(bytes[i])) spend(this.#encoded(form, value));
    });
    values.forEach((value) => {
      for (const form of textForms(value, () => Math.min(TEXT_GROWTH * value.length, this.#formsBudget))) spend(this.#text(form));
    });
    values.forEach((value, i) => {
      const size = bytes[i].length;
      if (size < 6 || size > this.#alignedBudget || 3 * base64Length(size) > this.#formsBudget) return;
      this.#alignedBudget -= size;
      for (const form of alignedForms(bytes[i])) spend(this.#encoded(form, value));
    });
    values.forEach((value, i) => {
      const size = bytes[i].length;
      if (size > this.#encodingsBudget || encodingsLength(value.length, size) > this.#formsBudget) return;
      this.#encodingsBudget -= size;
      const forms = encodingForms(value, bytes[i]);
      for (const form of forms.bytes) spend(this.#bytes(form, value));
      for (const form of forms.encoded) spend(this.#encoded(form, value));
    });
  }

  /** A service account's private_key_id and private_key, known as they are, and the key's lines, to be added as secrets. */
  #serviceAccountLines(json: string): string[] {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch {
      return [];
    }
    const { private_key: key, private_key_id: id } = (parsed ?? {}) as { private_key?: unknown; private_key_id?: unknown };
    if (typeof id === 'string' && id !== '') this.#learn('values', foldString(id));
    if (typeof key !== 'string' || key === '') return [];
    this.#learn('values', foldString(key));
    return key.split(/\r?\n/).filter((line) => line.length >= 16 && !line.startsWith('-----'));
  }

  /**
   * Builds one matcher of the generation over the forms made since the last: the pending forms,
   * merged with the last generation while it is no bigger, one kind at a time.
   */
  #buildOne(): void {
    if (this.#building === undefined) {
      const generations = this.#generations;
      let forms = this.#pending;
      let size = this.#pendingSize;
      while (generations.length > 0 && generations[generations.length - 1].size <= size) {
        const last = generations.pop()!;
        forms = {
          values: [...last.forms.values, ...forms.values],
          short: [...last.forms.short, ...forms.short],
          joined: [...last.forms.joined, ...forms.joined],
        };
        size += last.size;
      }
      this.#building = { forms, size, matchers: {} };
      this.#pending = noForms();
      this.#pendingSize = 0;
    }
    const building = this.#building;
    const kind = KINDS.find((k) => building.forms[k].length > 0 && building.matchers[k] === undefined);
    if (kind !== undefined) building.matchers[kind] = new Matcher(building.forms[kind]);
    if (KINDS.every((k) => building.forms[k].length === 0 || building.matchers[k] !== undefined)) {
      this.#generations.push(building);
      this.#building = undefined;
    }
  }

  /**
   * The text with each secret, and any userinfo, replaced by `******`. With `cut`, the text was cut
   * short (a peer's answer read up to a cap, an excerpt's window), and a secret's start at its end
   * is masked too, through the decoded views as well: an escape the cut left unfinished (`%4`) is
   * masked with the secret whose start runs into it. `joins`: ways to read the text with ranges
   * taken out ([start, end) pairs each), the separators this service put between a peer's pieces
   * (`code: message`) and maybe pieces: a secret the peer split over pieces is found in them.
   */
  redact(text: string, { cut = false, joins = [] }: { cut?: boolean; joins?: number[][] } = {}): string {
    if (text === '') return text;
    const lists = [userinfoSpans(text)];
    const generations = this.#matchers();
    if (generations.length > 0) {
      const codes = folded(text);
      const all = views(codes, cut);
      // A secret split over pieces, in an encoding too (`%53%65` in a code, the rest in its message): each joined text is decoded as the text is.
      for (const cuts of joins) all.push(...views(without(codes, cuts), cut));
      for (const view of all) {
        const end = cut && view.dropped !== undefined ? text.length : undefined;
        if (end !== undefined) lists.push([view.dropped!, end]);
        // Base64 wrapped over lines (MIME at 76 columns, PEM at 64, CRLF or LF), hex spaced by bytes.
        const joined = this.#known.joined.size > 0 ? joinedView(view) : undefined;
        for (const { matchers } of generations) {
          const spans = matchers.values?.spans(view.codes, cut) ?? [];
          // A short secret (`ca`) inside a word (`_catalog`) is that word, not the secret: it is
          // masked where it stands alone, as a value between quotes, separators or the text's ends.
          const found = matchers.short?.spans(view.codes, cut) ?? [];
          for (let i = 0; i < found.length; i += 2) if (standsAlone(view.codes, found[i], found[i + 1])) spans.push(found[i], found[i + 1]);
          if (found.length > 0) sortSpans(spans);
          lists.push(inOriginal(view, spans, end));
          if (joined !== undefined && matchers.joined !== undefined) lists.push(inOriginal(joined, matchers.joined.spans(joined.codes, cut), end));
        }
      }
    }
    const spans = mergeSpans(lists);
    let out = '';
    let copied = 0;
    for (let i = 0; i < spans.length; i += 2) {
      out += `${text.slice(copied, spans[i])}${MASK}`;
      copied = spans[i + 1];
    }
    return copied === 0 ? text : out + text.slice(copied);
  }

  /**
   * A deep copy of a JSON-able value with every string redacted one by one, so that a
   * short or common secret masks part of a string, never the JSON around it.
   */
  redactValue<T>(value: T): T {
    const root: Holder = {};
    const stack: [unknown, Holder, string | number][] = [[value, root, 'value']];
    while (stack.length > 0) {
      const [given, holder, key] = stack.pop()!;
      let v = given;
      if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') v = (v as { toJSON: () => unknown }).toJSON();
      if (typeof v === 'string') holder[key] = this.redact(v);
      else if (typeof v === 'number') holder[key] = Number.isFinite(v) ? v : null;
      else if (typeof v === 'boolean' || v === null) holder[key] = v;
      else if (Array.isArray(v)) {
        const out: unknown[] = new Array(v.length).fill(null);
        holder[key] = out;
        for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], out as unknown as Holder, i]);
      } else if (typeof v === 'object') {
        const out: Holder = {};
        holder[key] = out;
        // Keys are names (the schema's, or a mistyped one, whose value is masked): kept, so the shape stays.
        const entries = Object.entries(v as Holder).filter(([, child]) => child !== undefined && typeof child !== 'function' && typeof child !== 'symbol');
        // Defined in order first (and as own properties, so `__proto__` is a key like another).
        for (const [k] of entries) Object.defineProperty(out, k, { value: null, enumerable: true, writable: true, configurable: true });
        for (let i = entries.length - 1; i >= 0; i--) stack.push([entries[i][1], out, entries[i][0]]);
      } else if (Array.isArray(holder)) holder[key] = null;
    }
    return root.value as T;
  }
}
