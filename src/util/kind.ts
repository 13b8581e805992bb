// What a value is, in words, for messages a user reads: `statusCode` is "a string ('201')".
// Never throws, whatever the value (a Proxy, a getter that throws): messages are built on error
// paths.

const MAX_QUOTE = 40;

/**
 * `a string ('201')`, `a number (1000)`, `a function`, `an object`, `an array`, `null`,
 * `undefined`; without the value in brackets when `shown` is false.
 */
export function kindOf(value: unknown, { shown = true } = {}): string {
  try {
    const showing = (text: string) => (shown ? ` (${text})` : '');
    switch (typeof value) {
      case 'string':
        return `a string${showing(quote(value))}`;
      case 'number':
        return Number.isInteger(value) ? `a number${showing(String(value))}` : `a number with a fraction${showing(String(value))}`;
      case 'boolean':
      case 'bigint':
        return `a ${typeof value}${showing(String(value))}`;
      case 'symbol':
        return 'a symbol';
      case 'function':
        return 'a function';
      case 'undefined':
        return 'undefined';
    }
    if (value === null) return 'null';
    return Array.isArray(value) ? 'an array' : 'an object';
  } catch {
    return 'a value that cannot be read';
  }
}

function quote(text: string): string {
  const cut = text.length > MAX_QUOTE ? `${text.slice(0, MAX_QUOTE)}…` : text;
  return `'${cut.replace(/[\u0000-\u001f\u007f']/g, (c) => (c === "'" ? "\\'" : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`))}'`;
}
