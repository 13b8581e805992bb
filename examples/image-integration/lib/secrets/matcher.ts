// Finding many strings in a text at once: the folding both sides are seen through (case, white
// space), an Aho-Corasick matcher over folded UTF-16 units, and lists of [start, end) spans.

// The characters of \s (white space and line terminators), as a regular expression knows them.
export const isSpace = (c: number) =>
  c === 0x20 ||
  (c >= 0x09 && c <= 0x0d) ||
  c === 0xa0 ||
  c === 0x1680 ||
  (c >= 0x2000 && c <= 0x200a) ||
  c === 0x2028 ||
  c === 0x2029 ||
  c === 0x202f ||
  c === 0x205f ||
  c === 0x3000 ||
  c === 0xfeff;

// Characters that show nothing, which a peer may put between a secret's letters: the soft hyphen,
// the zero-width space, joiners and marks, the word joiner and invisible operators.
const isInvisible = (c: number) => c === 0xad || c === 0x180e || (c >= 0x200b && c <= 0x200f) || (c >= 0x2060 && c <= 0x2064);

/** One UTF-16 unit's folded form: case folded as Unicode's case mappings fold it, where that keeps one unit. */
function foldUnit(c: number): number {
  const ch = String.fromCharCode(c);
  // The lower case of the upper case: `ſ`, `ı` and the Kelvin sign fold to `s`, `i` and `k`.
  const upper = ch.toUpperCase();
  const lower = (upper.length === 1 ? upper : ch).toLowerCase();
  if (lower.length === 1) return lower.charCodeAt(0);
  // `İ` lowers to two units (`i` and a dot above); it is an `i` all the same.
  return c === 0x130 ? 0x69 : c;
}

// Case, white space and width do not hide a secret: both sides of a match are seen through this
// table, one UTF-16 unit for one: upper case to lower case (as Unicode folds it, where that keeps
// one unit), white space and invisible characters to ' ', fullwidth ASCII (`Ｓ`) to ASCII.
export const FOLD = (() => {
  const table = new Uint16Array(0x10000);
  for (let c = 0; c < 0x10000; c++) {
    if (isSpace(c) || isInvisible(c)) table[c] = 0x20;
    else if (c < 0x80) table[c] = c >= 0x41 && c <= 0x5a ? c + 0x20 : c;
    else if (c >= 0xff01 && c <= 0xff5e) table[c] = foldUnit(c - 0xfee0);
    else table[c] = foldUnit(c);
  }
  return table;
})();

export function folded(text: string): Uint16Array {
  const codes = new Uint16Array(text.length);
  for (let i = 0; i < text.length; i++) codes[i] = FOLD[text.charCodeAt(i)];
  return codes;
}

export function foldString(text: string): string {
  // Printable ASCII (base64 forms, most secrets): FOLD is toLowerCase there.
  if (/^[\x20-\x7e]*$/.test(text)) return text.toLowerCase();
  return fromCodes(folded(text));
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** UTF-16 units as a string, lone surrogates kept: their bytes copied, read as UTF-16LE (on a little-endian machine), so a long form is one flat string made at once. */
export function fromCodes(codes: Uint16Array): string {
  if (LITTLE_ENDIAN) return Buffer.from(codes.buffer, codes.byteOffset, codes.byteLength).toString('utf16le');
  let out = '';
  for (let i = 0; i < codes.length; i += 8192) out += String.fromCharCode.apply(null, codes.subarray(i, i + 8192) as unknown as number[]);
  return out;
}

/**
 * Finds many strings in a text at once (Aho-Corasick): the time is the length of the text plus the
 * total length of the strings, however many strings there are. Splitting the text on each secret in
 * turn took their number times the text's length: 30,000 unknown fields of 550 KB held the service
 * for 38 s. The tree lives in typed arrays, 18 bytes a node; the root's children are a table by
 * character for Latin-1 and a Map beyond it, and another node with two children or more keeps them
 * in a Map. Strings and texts are
 * given folded (FOLD). A string is followed down the tree only as far as the tree has it: the rest
 * is a new chain, made without a lookup (about 40 ns a character).
 */
export class Matcher {
  readonly #char: Uint16Array; // the character of a node's only child
  readonly #child: Int32Array; // > 0: the only child; < 0: -1 - the index in #maps of its children; 0: none
  readonly #maps: Map<number, number>[] = [];
  readonly #fail: Int32Array; // the node of the longest proper suffix that is also in the tree
  readonly #longest: Int32Array; // the length of the longest string that ends at this node, or 0
  readonly #depth: Int32Array; // the length of the prefix this node stands for
  readonly #root = new Int32Array(0x100); // the root's children by character, below U+0100
  readonly #rootBeyond = new Map<number, number>(); // and from U+0100 on

  constructor(strings: Iterable<string>) {
    const list = [...strings].filter((s) => s !== '');
    const size = list.reduce((sum, s) => sum + s.length, 1);
    const char = (this.#char = new Uint16Array(size));
    const child = (this.#child = new Int32Array(size));
    const fail = (this.#fail = new Int32Array(size));
    const longest = (this.#longest = new Int32Array(size));
    const depth = (this.#depth = new Int32Array(size));
    const root = this.#root;
    const beyond = this.#rootBeyond;
    const maps = this.#maps;
    const next = (node: number, c: number): number => {
      if (node === 0) return c < 0x100 ? root[c] : (beyond.get(c) ?? 0);
      const only = child[node];
      if (only > 0) return char[node] === c ? only : 0;
      return only === 0 ? 0 : (maps[-only - 1].get(c) ?? 0);
    };
    let count = 1;
    for (const s of list) {
      let node = 0;
      let i = 0;
      for (let found = next(0, s.charCodeAt(0)); found !== 0 && i < s.length; found = next(node, s.charCodeAt(i))) {
        node = found;
        i++;
      }
      for (; i < s.length; i++) {
        const c = s.charCodeAt(i);
        const made = count++;
        depth[made] = i + 1;
        const only = child[node];
        if (node === 0) {
          if (c < 0x100) root[c] = made;
          else beyond.set(c, made);
        } else if (only === 0) {
          char[node] = c;
          child[node] = made;
        } else if (only > 0) {
          child[node] = -maps.push(
            new Map([
              [char[node], only],
              [c, made],
            ]),
          );
        } else maps[-only - 1].set(c, made);
        node = made;
      }
      longest[node] = s.length;
    }
    // Breadth first, so that every suffix's node is done before the nodes that fall back to it.
    const queue = new Int32Array(count);
    let tail = 0;
    for (let c = 0; c < 0x100; c++) if (root[c] !== 0) queue[tail++] = root[c];
    for (const node of beyond.values()) queue[tail++] = node;
    const visit = (parent: number, c: number, node: number) => {
      let fallback = fail[parent];
      let target = next(fallback, c);
      while (target === 0 && fallback !== 0) {
        fallback = fail[fallback];
        target = next(fallback, c);
      }
      fail[node] = target;
      if (longest[node] === 0) longest[node] = longest[target];
      queue[tail++] = node;
    };
    for (let head = 0; head < tail; head++) {
      const parent = queue[head];
      const only = child[parent];
      if (only > 0) visit(parent, char[parent], only);
      else if (only < 0) for (const [c, node] of maps[-only - 1]) visit(parent, c, node);
    }
  }

  /**
   * Where the strings occur in `text`, as [start, end) pairs in order; overlapping ones are merged.
   * With `cut`, the text was cut short: its end, when it is the start of a string, counts too.
   */
  spans(text: Uint16Array, cut = false): number[] {
    const char = this.#char;
    const child = this.#child;
    const maps = this.#maps;
    const root = this.#root;
    const beyond = this.#rootBeyond;
    const fail = this.#fail;
    const longest = this.#longest;
    const spans: number[] = [];
    const push = (start: number, end: number) => {
      while (spans.length > 0 && spans[spans.length - 1] > start) {
        spans.pop();
        start = Math.min(start, spans.pop()!);
      }
      spans.push(start, end);
    };
    let node = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text[i];
      for (;;) {
        let found: number;
        if (node === 0) found = c < 0x100 ? root[c] : (beyond.get(c) ?? 0);
        else {
          const only = child[node];
          found = only > 0 ? (char[node] === c ? only : 0) : only === 0 ? 0 : (maps[-only - 1].get(c) ?? 0);
        }
        if (found !== 0 || node === 0) {
          node = found;
          break;
        }
        node = fail[node];
      }
      const length = longest[node];
      if (length !== 0) push(i + 1 - length, i + 1);
    }
    if (cut && node !== 0) push(text.length - this.#depth[node], text.length);
    return spans;
  }
}

/** Merges lists of sorted [start, end) pairs; overlapping pairs become one, touching ones stay two. */
export function mergeSpans(lists: number[][]): number[] {
  const at = lists.map(() => 0);
  const out: number[] = [];
  for (;;) {
    let best = -1;
    for (let l = 0; l < lists.length; l++) if (at[l] < lists[l].length && (best === -1 || lists[l][at[l]] < lists[best][at[best]])) best = l;
    if (best === -1) return out;
    const start = lists[best][at[best]];
    const end = lists[best][at[best] + 1];
    at[best] += 2;
    if (out.length > 0 && out[out.length - 1] > start) out[out.length - 1] = Math.max(out[out.length - 1], end);
    else out.push(start, end);
  }
}

/** Sorts [start, end) pairs by start, in place, and merges overlapping ones. */
export function sortSpans(spans: number[]): void {
  const pairs: [number, number][] = [];
  for (let i = 0; i < spans.length; i += 2) pairs.push([spans[i], spans[i + 1]]);
  pairs.sort((a, b) => a[0] - b[0]);
  spans.length = 0;
  for (const [start, end] of pairs) {
    if (spans.length > 0 && spans[spans.length - 1] > start) spans[spans.length - 1] = Math.max(spans[spans.length - 1], end);
    else spans.push(start, end);
  }
}
