// "Did you mean ...?": the nearest of the known names to a mistyped one, for error messages
// (`--prot` is `--port`, `hadle` is `handle`).

/**
 * The candidate nearest to `word` by edits (case ignored), if it is near enough to be a typo.
 * With `prefixes`, a word that starts the candidate or that the candidate starts (three letters
 * at least) is a near miss too: `--log` for `--log-level`, `handler` for `handle`.
 */
export function nearest(word: string, candidates: readonly string[], { prefixes = false } = {}): string | undefined {
  const typed = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const known = candidate.toLowerCase();
    // Short names get one edit, longer ones two: `hadle` is `handle`, `initDb` is not `init`.
    const limit = Math.min(typed.length, known.length) <= 5 ? 1 : 2;
    const prefix = prefixes && Math.min(typed.length, known.length) >= 3 && (known.startsWith(typed) || typed.startsWith(known));
    const distance = prefix ? Math.min(1, Math.abs(known.length - typed.length)) : rearranged(typed, known) ? 1 : edits(typed, known, limit);
    if (distance <= limit && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

// The same letters in another order (`sever` for `serve`): a slip of the fingers, however many edits apart.
function rearranged(a: string, b: string): boolean {
  return a.length >= 4 && a.length === b.length && a !== b && [...a].sort().join('') === [...b].sort().join('');
}

/**
 * The one-line refusal of a value outside `allowed`: the nearest allowed value, then the list.
 * `what` names the setting (`--template`, `config envs action`).
 */
export function notOneOf(what: string, value: string, allowed: readonly string[]): string {
  const meant = nearest(value, allowed, { prefixes: true });
  const list = allowed.length === 2 ? allowed.join(' or ') : `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}`;
  return `unknown ${what} '${value}': ${meant === undefined ? `expected ${list}` : `did you mean ${meant}? (expected ${list})`}`;
}

// Edit distance with swapped neighbours as one edit (`prot` is one edit from `port`), stopping
// once every path is past `limit` (names are short, and this runs on error paths only).
function edits(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let smallest = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) current[j] = Math.min(current[j], before[j - 2] + 1);
      smallest = Math.min(smallest, current[j]);
    }
    if (smallest > limit) return limit + 1;
    before = previous;
    previous = current;
  }
  return previous[b.length];
}

/**
 * A command-line parsing error (node:util parseArgs) as one line: an unknown option names the
 * nearest known one, and every message says where the options are listed. `known` are the
 * options' names without dashes.
 */
export function usageMessage(
  err: unknown,
  known: readonly string[],
  help: string,
  variables?: ReadonlyMap<string, { name: string; variable: string }>,
): string {
  const message = String((err as Error | null)?.message ?? err).split('\n')[0];
  if ((err as NodeJS.ErrnoException | null)?.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const option = /'(-{1,2}[^']*)'/.exec(message)?.[1];
    // A setting that has a variable, not a flag: say which variable.
    const setting = option === undefined ? undefined : variables?.get(option.replace(/-/g, '').toLowerCase());
    if (setting !== undefined) return `unknown option '${option}': ${setting.name} is set by the variable ${setting.variable} (${help} lists the options)`;
    if (option !== undefined) {
      const meant = nearest(option.replace(/^-+/, ''), known, { prefixes: true });
      return `unknown option '${option}'${meant === undefined ? '' : `: did you mean --${meant}?`} (${help} lists the options)`;
    }
  }
  // Node's own way out, on a later line of its message: `--value=-1s` for a value that starts with a dash.
  const dashed = /use '(--[^'=]+)=-XYZ'/.exec(String((err as Error | null)?.message ?? ''))?.[1];
  if (dashed !== undefined) return `${message.replace(/\.$/, '')}: a value that starts with a dash is written ${dashed}=<value> (${help})`;
  return `${message.replace(/\.$/, '')} (${help})`;
}
