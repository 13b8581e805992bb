// The mask every secret is replaced by, and the replacing: a text with [start, end) spans (sorted,
// merged) each written as one `******`. One place, so that every path masks alike (a cut excerpt
// keeps a mask whole by knowing its length: excerpt.ts).

export const MASK = '******';

/** The text with each of `spans` ([start, end) pairs, in order, not overlapping) replaced by MASK. */
export function maskSpans(text: string, spans: number[]): string {
  let out = '';
  let copied = 0;
  for (let i = 0; i < spans.length; i += 2) {
    out += `${text.slice(copied, spans[i])}${MASK}`;
    copied = spans[i + 1];
  }
  return copied === 0 ? text : out + text.slice(copied);
}
