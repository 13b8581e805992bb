// Recognising funcrun's own classes across copies of funcrun. A function's node_modules may hold
// a funcrun other than the one serving it (a bundled one, a second version): `instanceof` would
// then fail, and an HttpError's details or a cloudEventResponse chain would be lost. Each class
// carries a brand under a registered symbol, the same in every copy, checked on its prototype chain.

/** Makes `instanceof Class` true for instances of the same class from any copy of funcrun. */
export function brand(Class: abstract new (...args: never[]) => object, name: string): void {
  const mark = Symbol.for(`funcrun.${name}`);
  Object.defineProperty(Class.prototype, mark, { value: true });
  const ownCheck = Function.prototype[Symbol.hasInstance];
  Object.defineProperty(Class, Symbol.hasInstance, {
    value(this: unknown, value: unknown): boolean {
      // A subclass keeps ordinary instanceof: only the class itself stands for every copy.
      if (this !== Class) return ownCheck.call(this, value);
      if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
      try {
        return (value as Record<symbol, unknown>)[mark] === true;
      } catch {
        // A Proxy whose traps throw is no instance of anything of ours.
        return false;
      }
    },
  });
}
