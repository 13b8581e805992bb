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

/**
 * Makes a light class's objects stand for the platform's: `light` (their prototype) inherits from
 * the light global's prototype, names it as constructor, answers every property and method of
 * `native` (the platform's prototype) it does not define itself with its real object (the one
 * `this[real]()` makes), and its own members are not enumerable, as undici's are.
 */
export function standFor(light: object, global: abstract new (...args: never[]) => unknown, native: object, real: symbol): void {
  type Light = Record<symbol, () => object>;
  Object.setPrototypeOf(light, global.prototype);
  Object.defineProperty(light, 'constructor', { value: global, writable: true, configurable: true });
  for (const name of Object.getOwnPropertyNames(native)) {
    if (Object.hasOwn(light, name)) continue;
    const member = Object.getOwnPropertyDescriptor(native, name)!;
    if (member.get !== undefined) {
      const get = member.get;
      Object.defineProperty(light, name, {
        get: function (this: Light) {
          return get.call(this[real]!()) as unknown;
        },
        configurable: true,
      });
    } else if (typeof member.value === 'function') {
      const method = member.value as (...args: unknown[]) => unknown;
      Object.defineProperty(light, name, {
        value: function (this: Light, ...args: unknown[]) {
          return method.apply(this[real]!(), args);
        },
        writable: true,
        configurable: true,
      });
    }
  }
  for (const name of Object.getOwnPropertyNames(light)) Object.defineProperty(light, name, { enumerable: false });
}
