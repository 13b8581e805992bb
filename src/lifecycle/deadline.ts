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
 * A promise of `value`, or rejected with what `late()` returns once `ms` have passed; `value`
 * fulfilled after that is handed to `lateValue`. The timer is cleared as soon as `value` settles,
 * and is not unref'd: something waiting on it keeps the process. One promise and one reaction (not
 * Promise.race() and finally(), which an async function's every request paid for).
 */
export function settleWithin<T>(value: T | PromiseLike<T>, ms: number, late: () => unknown, lateValue?: (value: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let expired = false;
    const timer = setTimeout(
      () => {
        expired = true;
        reject(late());
      },
      Math.max(0, ms),
    );
    Promise.resolve(value).then(
      (settled) => {
        clearTimeout(timer);
        if (!expired) resolve(settled);
        else lateValue?.(settled);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
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
