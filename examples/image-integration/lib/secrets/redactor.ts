// The Redactor: what leaves the service (answers, errors, log lines) with every secret of the test
// masked, in any of the forms it travels in. It notes secrets as a test learns them (form-book.ts
// makes their forms, generations.ts builds matchers over them) and searches a text, and each
// decoded view of it (views.ts), with every matcher; a text cut short has a secret's start at its
// cut masked too.
import { buildTurns, Generations, type Generation } from './generations';
import { FormBook } from './form-book';
import { maskSpans } from './mask';
import { folded, mergeSpans, sortSpans } from './matcher';
import { userinfoSpans } from './userinfo';
import { inOriginal, joinedView, views, without } from './views';

type Holder = Record<string, unknown>;

// Letters, digits and '_', folded: what a short secret may not touch to be itself.
const isWordCode = (c: number) => (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x5f || c > 0x7f;

function standsAlone(codes: Uint16Array, start: number, end: number): boolean {
  return (start === 0 || !isWordCode(codes[start - 1])) && (end === codes.length || !isWordCode(codes[end]));
}

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
 * secret itself come out of one budget (FORMS_BUDGET, form-book.ts), so no secret, however it grows when
 * rewritten, costs a test more than that. Secrets are added along a test (its Basic credentials, a
 * token received): the forms added since the last matchers were built get matchers of their own,
 * merged with the last ones while those are no bigger, so a form is built into a matcher a few
 * times in all, not once per addition.
 */
export class Redactor {
  readonly #forms = new FormBook();
  readonly #generations = new Generations();

  constructor(values: Iterable<string> = []) {
    for (const value of values) this.add(value);
  }

  /** A secret, to be known in every form it travels in (within the budgets); the first added get the most. */
  add(value: string | undefined): this {
    this.#forms.add(value);
    return this;
  }

  /**
   * A text known as it is only (in any case, and through the decoded views), not in encodings of
   * its own: a value of an ignored field (a mistyped `pasword`), which is never sent to a peer so
   * no peer can quote it encoded; the Basic credentials as their header carries them, masked
   * whatever is left of the budget.
   */
  addAsIs(value: string): this {
    this.#forms.addAsIs(value);
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
    return this.#forms.unmade || this.#forms.pendingSize > 0 || this.#generations.building;
  }

  /** One piece of what is left to do: the forms of what was added made, or one matcher built. */
  #step(): void {
    if (this.#forms.unmade) this.#forms.make();
    else if (this.#generations.building || this.#forms.pendingSize > 0) this.#generations.buildOne(() => this.#forms.takePending());
  }

  /** The matchers over every form added, the work left done now. */
  #matchers(): readonly Generation[] {
    while (this.#working()) this.#step();
    return this.#generations.built;
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
        const joined = this.#forms.knowsJoined ? joinedView(view) : undefined;
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
    return maskSpans(text, mergeSpans(lists));
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

