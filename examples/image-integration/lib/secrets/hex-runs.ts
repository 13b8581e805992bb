// Hex spaced by bytes (`53 65 6b`, `53:65:6b`, `0x53,0x65`), as dumps and tools print it, decoded
// into a view; and at a cut, what the cut left of such a run (`53:`, `53:6`): read as that byte
// running to the text's end, so that a secret whose hex starts so is masked to the end.
import { decoded, hex, hexDigit, utf8, type View } from './view';

const isAlnum = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a); // folded

/** Where a byte written in hex at i ends (`6b`, `0x6b`), or -1. */
function hexByteEnd(codes: Uint16Array, i: number): number {
  if (codes[i] === 0x30 && codes[i + 1] === 0x78 && hex(codes, i + 2, 2) >= 0) return i + 4;
  return hex(codes, i, 2) >= 0 ? i + 2 : -1;
}

/** Where the separator between two bytes in hex at i ends (` `, two spaces, `:`, `-`, `.`, `,`, `, `), or -1. */
function separatorEnd(codes: Uint16Array, i: number): number {
  const c = codes[i];
  if ((c === 0x2c || c === 0x20) && codes[i + 1] === 0x20) return i + 2;
  return c === 0x20 || c === 0x3a || c === 0x2d || c === 0x2e || c === 0x2c ? i + 1 : -1;
}

/** Whether `codes` from i to its end could begin a separator and a byte in hex: what a cut left of one. */
function separatorTail(codes: Uint16Array, i: number): boolean {
  if (codes.length - i > 5) return false;
  let j = i;
  const sep = separatorEnd(codes, j);
  if (sep === -1) return j === codes.length;
  j = sep;
  if (codes[j] === 0x30) j++;
  if (codes[j] === 0x78) j++;
  for (; j < codes.length; j++) if (hexDigit(codes[j]) < 0) return false;
  return true;
}

/**
 * Hex spaced by bytes, as dumps and tools print it (`53 65 6b`, `53:65:6b`, `53-65-6b`,
 * `0x53,0x65`, `0x53, 0x65`): runs of two bytes or more, each two hex digits with or without `0x`,
 * one separator between them, neither end touching a letter or a digit; decoded as UTF-8. Hex
 * without separators is among a secret's forms; this view finds the spaced kinds.
 */
export function hexRunsView(source: View, cut: boolean): View | undefined {
  const view = decoded(source, (codes, emit) => {
    const n = codes.length;
    const bytes: number[] = [];
    const at: number[] = [];
    const widths: number[] = [];
    for (let i = 0; i < n;) {
      bytes.length = 0;
      at.length = 0;
      widths.length = 0;
      if (i === 0 || !isAlnum(codes[i - 1])) {
        // Each byte, then a separator when another byte follows it.
        for (let j = i, end = hexByteEnd(codes, j); end !== -1 && (end === n || !isAlnum(codes[end])); end = hexByteEnd(codes, j)) {
          bytes.push(end - j === 4 ? hex(codes, j + 2, 2) : hex(codes, j, 2));
          at.push(j);
          widths.push(end - j);
          j = separatorEnd(codes, end);
          if (j === -1 || hexByteEnd(codes, j) === -1) break;
        }
      }
      const last = bytes.length === 0 ? i : at[at.length - 1] + widths[widths.length - 1];
      // At a cut, one byte and what the cut left of a separator and the next (`53:`, `53:6`,
      // `0x53,0x`): a run's start, read as that byte running to the text's end, so that a secret
      // whose hex starts so is masked to the end, and other text is not (a byte that starts a UTF-8
      // sequence is left out to the end, as any sequence a cut leaves unfinished). Spaced by white
      // space alone, it is found in the white-space-free search.
      if (bytes.length === 1 && cut && last < n && separatorTail(codes, last) && (widths[0] === 4 || codes[last] !== 0x20)) {
        widths[0] = n - at[0];
        const stop = utf8(bytes, at, widths, true, emit);
        if (stop !== undefined) return stop;
        break;
      }
      if (bytes.length < 2) {
        emit(codes[i], i, i + 1);
        i++;
        continue;
      }
      const atEnd = cut && separatorTail(codes, last);
      const stop = utf8(bytes, at, widths, atEnd, emit);
      if (stop !== undefined) return stop;
      if (atEnd && last < n) return last;
      i = last;
    }
  });
  return view.codes.length === source.codes.length ? undefined : view;
}
