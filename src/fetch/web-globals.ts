// `lightWebGlobals` (FUNC_LIGHT_WEB_GLOBALS): the global Request, Response and fetch replaced, for
// the process, by light ones, as @hono/node-server does by default. A fetch handler's Request is
// then a look-alike made lazily (light-request.ts), and a Response of text or of no body keeps
// its parts and is written without a web stream (light-response.ts): undici's classes cost more
// per request than the rest of funcrun does. Each light class is a subclass of the platform's:
// `instanceof` holds both ways, `new Request(request)` and `fetch(request)` take a look-alike,
// and what a light object cannot give itself its real counterpart (made then) gives.
import { lightFetch, LightRequest } from './light-request';
import { LightResponse } from './light-response';
import { lightGlobals } from './natives';

/** Replaces the globals, once per process (by whichever copy of funcrun comes first); they stay for the process. */
export function installWebGlobals(): void {
  if (lightGlobals()) return;
  for (const [name, value] of Object.entries({ Request: LightRequest, Response: LightResponse, fetch: lightFetch })) {
    // As the platform's own are defined: fetch enumerable, the classes not.
    const enumerable = Object.getOwnPropertyDescriptor(globalThis, name)?.enumerable ?? false;
    Object.defineProperty(globalThis, name, { value, writable: true, enumerable, configurable: true });
  }
}
