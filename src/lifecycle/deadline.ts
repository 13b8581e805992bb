// The one race against the clock: a function's answer, authorize(), a probe's check, the
// waitUntil work of a drain and shutdown() are each given until a deadline.

// `performance` is one of node's lazy globals: every read of it runs a getter. A request reads
// the clock several times, so the object is read once, on first use rather than at start (the
// first read loads node's perf_hooks, which a start does not need).
let clock: typeof performance | undefined;

/** `performance.now()`: milliseconds on the monotonic clock. */
export function now(): number {
  return (clock ??= performance).now();
}

/**
 * A promise of `value`, or rejected with what `late()` returns once `ms` have passed. The timer is
 * cleared as soon as `value` settles, and is not unref'd: something waiting on it keeps the process.
 */
export function settleWithin<T>(value: T | PromiseLike<T>, ms: number, late: () => unknown): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), Math.max(0, ms));
  });
  return Promise.race([value, expired]).finally(() => clearTimeout(timer));
}

/**
 * Whether `await` would wait for `value`: an object or a function with a `then` method. Never
 * throws: a value whose `then` cannot be read (a revoked Proxy) is not one, and is answered as
 * the value it is.
 */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  try {
    return typeof (value as { then?: unknown }).then === 'function';
  } catch {
    return false;
  }
}
