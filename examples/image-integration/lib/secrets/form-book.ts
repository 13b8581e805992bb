// The forms a Redactor knows its secrets in, made within budgets: each secret as it is (and split
// over lines or spaced out), then its base64, its other text forms, its base64 at any alignment,
// and its hex, UTF-16 and Latin-1, each kind for every secret before the next, out of one budget of
// characters, so that no secret, however it grows when rewritten, costs a test more than that. The
// forms made are sorted by kind and handed, as they pile up, to the matchers (generations.ts).
import { alignedForms, base64Forms, base64Length, encodingForms, encodingsLength, joinedForm, textForms } from './forms';
import { foldString } from './matcher';

/** Forms of a secret shorter than this many characters are masked only where they stand alone. */
const SHORT_FORM = 4;

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

export type Kind = 'values' | 'short' | 'joined';
export const KINDS: readonly Kind[] = ['values', 'short', 'joined'];

/** Forms of one kind each: the plain and byte forms, those shorter than SHORT_FORM, the white-space-free search. */
export type FormLists = Record<Kind, string[]>;

export const noForms = (): FormLists => ({ values: [], short: [], joined: [] });

/**
 * The forms of the secrets added, by kind: those still to be made (`make`), and those made and not
 * yet built into a matcher (`takePending`). A form added again costs nothing.
 */
export class FormBook {
  // Every form known, by kind: a form added again costs nothing.
  readonly #known: Record<Kind, Set<string>> = { values: new Set(), short: new Set(), joined: new Set() };
  // Secrets added, and those whose forms are still to be made; texts known as they are only, still to be learned.
  readonly #added = new Set<string>();
  #queued: string[] = [];
  #asIs: string[] = [];
  #pending = noForms();
  #pendingSize = 0;
  // Characters of forms still to be made (FORMS_BUDGET); bytes of secrets still known in the aligned base64 forms, and in the other encodings.
  #formsBudget = FORMS_BUDGET;
  #alignedBudget = ALIGNED_BUDGET;
  #encodingsBudget = ENCODINGS_BUDGET;

  /** A secret, its forms to be made; one added before, or empty, is nothing new. */
  add(value: string | undefined): void {
    if (value === undefined || value === '' || this.#added.has(value)) return;
    this.#added.add(value);
    this.#queued.push(value);
  }

  /** A text to be known as it is only (Redactor.addAsIs). */
  addAsIs(value: string): void {
    if (value !== '') this.#asIs.push(value);
  }

  /** Whether secrets or texts were added whose forms are still to be made. */
  get unmade(): boolean {
    return this.#queued.length > 0 || this.#asIs.length > 0;
  }

  /** Characters of the forms made and not yet taken for a matcher. */
  get pendingSize(): number {
    return this.#pendingSize;
  }

  /** Whether any form is in the white-space-free search (a text is then also read so). */
  get knowsJoined(): boolean {
    return this.#known.joined.size > 0;
  }

  /** The forms made since the last time, and their size, for a matcher of their own. */
  takePending(): { forms: FormLists; size: number } {
    const taken = { forms: this.#pending, size: this.#pendingSize };
    this.#pending = noForms();
    this.#pendingSize = 0;
    return taken;
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
  make(): void {
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
    // Known as they are, a short one (under SHORT_FORM) only where it stands alone, as any secret's text.
    if (typeof id === 'string' && id !== '') this.#text(id);
    if (typeof key !== 'string' || key === '') return [];
    this.#text(key);
    return key.split(/\r?\n/).filter((line) => line.length >= 16 && !line.startsWith('-----'));
  }
}
