// The views a text is searched in: the text, and what it reads as with up to three layers of
// encoding undone (decoders.ts, hex-runs.ts), each character mapped back to where it came from;
// the text without the separators this service put between a peer's pieces; and the view the
// white-space-free search reads. inOriginal maps what was found back to the text.
import { htmlView, hexEscapeView, jsonView, percentView, quoteView } from './decoders';
import { hexRunsView } from './hex-runs';
import { decoded, type View } from './view';

export type { View } from './view';

/** The decoded views a text is searched in, besides the text itself: one decoding, or two in a row. */
// How the text may have been encoded, one layer each; layers stack (a password percent-encoded
// twice in a redirect URL, Go's JSON escapes under percent-encoding, HTML over percent, SQL's quotes in JSON).
const DECODERS: ((view: View, cut: boolean) => View | undefined)[] = [
  jsonView,
  (v, cut) => percentView(v, false, cut),
  (v, cut) => percentView(v, true, cut),
  htmlView,
  hexEscapeView,
  hexRunsView,
  quoteView,
];
/** Layers of encoding undone, at most; and views made, at most (each is one pass over the text). */
const MAX_LAYERS = 3;
const MAX_VIEWS = 24;

/**
 * The text (or a view of it: the pieces of a peer's answer joined) and its decoded views; with
 * `cut` (the text was cut short), escapes the cut left unfinished are left out of them (View.dropped).
 */
export function views(text: Uint16Array | View, cut = false): View[] {
  const plain: View = text instanceof Uint16Array ? { codes: text, from: undefined, to: undefined } : text;
  const out: View[] = [plain];
  let layer = [plain];
  for (let depth = 0; depth < MAX_LAYERS && layer.length > 0; depth++) {
    const next: View[] = [];
    for (const view of layer) {
      for (const decode of DECODERS) {
        const decoded = decode(view, cut);
        if (decoded === undefined) continue;
        next.push(decoded);
        out.push(decoded);
        if (out.length >= MAX_VIEWS) return out;
      }
    }
    layer = next;
  }
  return out;
}

/**
 * The text without the ranges in `cuts` ([start, end) pairs, in order): the separators this
 * service put between a peer's pieces (the `: ` between an error's code and its message), and maybe
 * pieces too, so that a secret the peer split over two fields is found whole.
 */
export function without(text: Uint16Array, cuts: number[]): View {
  const plain: View = { codes: text, from: undefined, to: undefined };
  return decoded(plain, (codes, emit) => {
    let s = 0;
    for (let i = 0; i < codes.length; i++) {
      while (s < cuts.length && cuts[s + 1] <= i) s += 2;
      if (s < cuts.length && cuts[s] <= i) continue;
      emit(codes[i], i, i + 1);
    }
  });
}

/**
 * A view's [start, end) pairs, in place, as the original text's. `end`: the original text's length,
 * when the view stops before an escape the cut left unfinished; a pair that reaches the view's end
 * (a secret's start, cut) then reaches the text's end.
 */
export function inOriginal(view: View, spans: number[], end?: number): number[] {
  if (view.from === undefined || view.to === undefined) return spans;
  for (let i = 0; i < spans.length; i += 2) {
    const last = spans[i + 1];
    spans[i] = view.from[spans[i]];
    spans[i + 1] = end !== undefined && last === view.codes.length ? end : view.to[last - 1];
  }
  return spans;
}

/**
 * The view as the white-space-free search sees it: without its white space (folded to ' '), and with
 * base64url's `-` and `_` read as base64's `+` and `/`, so that one form stands for both alphabets.
 */
export function joinedView(source: View): View {
  return decoded(source, (codes, emit) => {
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i];
      if (c !== 0x20) emit(c === 0x2d ? 0x2b : c === 0x5f ? 0x2f : c, i, i + 1);
    }
  });
}
