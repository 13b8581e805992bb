// A message's placeholders filled in (`log.info('user %s paid %d', name, cents)`), as pino's
// quick-format-unescaped does, within the line's budget and without throwing.
import { MAX_DEPTH, objectJson, valueJson, type LineBudget } from './json';
import { get, num, text } from './serializers';

/**
 * pino's `quick-format-unescaped`, made safe: `%s` is `String(x)`, `%d %f` `Number(x)`, `%i`
 * `Math.floor(Number(x))`, `%j %o %O` JSON; `%d %i %f` leave the placeholder for null or undefined,
 * `%j %o %O` for undefined; `%%` is `%` when there are arguments. Arguments left over are ignored.
 */
export function format(budget: LineBudget, f: string, args: ArrayLike<unknown>, from: number): string {
  const argLen = args.length;
  if (from >= argLen) return f;
  let str = '';
  let a = from;
  let lastPos = -1;
  const flen = f.length;
  // Placeholders past the message's budget are not formatted (msgJson cuts the message to it).
  const saved = budget.room;
  for (let i = 0; i < flen && str.length <= saved; i++) {
    if (f.charCodeAt(i) !== 37 || i + 1 >= flen) continue;
    if (lastPos === -1) lastPos = 0;
    const char = f.charCodeAt(i + 1);
    const piece = placeholder(budget, char, args, a);
    if (piece !== undefined) {
      if (lastPos < i) str += f.slice(lastPos, i);
      str += piece;
      lastPos = i + 2;
      i++;
    }
    // As pino: an unknown `%x`, or one without a usable argument, still uses up an argument; `%%` none.
    if (char !== 37) a++;
  }
  // %j's values were cut as they were written; the message is charged once, when it is written.
  budget.room = saved;
  if (lastPos === -1) return f;
  return lastPos < f.length ? str + f.slice(lastPos) : str;
}

/** The text of the placeholder `%` + `char` for the argument at `a`, or undefined to leave it as it is. */
function placeholder(budget: LineBudget, char: number, args: ArrayLike<unknown>, a: number): string | undefined {
  const has = a < args.length;
  switch (char) {
    case 100: // d
    case 102: // f
      return has && args[a] != null ? String(num(args[a])) : undefined;
    case 105: // i
      return has && args[a] != null ? String(Math.floor(num(args[a]))) : undefined;
    case 79: // O
    case 111: // o
    case 106: // j
      return has && args[a] !== undefined ? formatValue(budget, args[a]) : undefined;
    case 115: // s
      return has ? (isArray(args[a]) ? joined(budget, args[a] as unknown[]) : text(args[a])) : undefined;
    case 37: // %
      return '%';
    default:
      return undefined;
  }
}

/** `%j %o %O`: a string in single quotes, a function by name, anything else as JSON. */
function formatValue(budget: LineBudget, value: unknown): string {
  switch (typeof value) {
    case 'string':
      return "'" + value + "'";
    case 'function': {
      const name = get(value, 'name');
      return typeof name === 'string' && name !== '' ? name : '<anonymous>';
    }
    case 'bigint':
    case 'symbol':
      return text(value);
    default:
      return (value !== null && typeof value === 'object' ? objectJson(budget, value) : valueJson(budget, value)) ?? 'undefined';
  }
}

/** `String(array)` (its items joined by commas, nested arrays alike), stopped once the line has no room left. */
function joined(budget: LineBudget, items: unknown[], depth = 0): string {
  let out = '';
  let length: number;
  try {
    length = items.length;
  } catch {
    return '[unprintable]';
  }
  for (let i = 0; i < length && out.length <= budget.room; i++) {
    if (i > 0) out += ',';
    const item = get(items, i);
    if (item === null || item === undefined) continue;
    out += isArray(item) ? (depth < MAX_DEPTH ? joined(budget, item as unknown[], depth + 1) : '') : text(item);
  }
  return out;
}

/** Array.isArray(), false where asking throws (a revoked Proxy): that one value is then its text, not the whole message lost. */
function isArray(value: unknown): boolean {
  try {
    return Array.isArray(value);
  } catch {
    return false;
  }
}
