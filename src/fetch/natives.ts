// The platform's own Request, Response and fetch (node's, undici's), whatever the globals are by
// the time this module loads: with `lightWebGlobals` the globals are funcrun's light classes
// (web-globals.ts), which name the class they stand in for under a registered symbol, the same
// in every copy of funcrun. funcrun's own code makes and tests real ones with these.

/** On a light global (any copy's): the platform's class or function it stands in for. */
export const NATIVE = Symbol.for('funcrun.web.native');

function nativeOf<T extends object>(value: T): T {
  return (value as T & { [NATIVE]?: T })[NATIVE] ?? value;
}

export const NativeRequest: typeof Request = nativeOf(globalThis.Request);
export const NativeResponse: typeof Response = nativeOf(globalThis.Response);
export const nativeFetch: typeof fetch = nativeOf(globalThis.fetch);

/** Whether the global Request, Response and fetch are light ones (installed by this copy of funcrun or another). */
export function lightGlobals(): boolean {
  return NATIVE in globalThis.Request && NATIVE in globalThis.Response && NATIVE in globalThis.fetch;
}

/** `instanceof` as the platform's class answers it, whatever that class's Symbol.hasInstance says. */
export const ordinaryInstanceOf = Function.prototype[Symbol.hasInstance];
