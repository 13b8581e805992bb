// Where the seed and faas-js-runtime disagree, funcrun follows the seed; `FUNC_COMPAT=faas-js-runtime`
// follows faas-js-runtime instead, so a function written for it runs unchanged. The switch is read
// once at start into this table of plain flags: the request path tests a boolean, never the mode.
import { ConfigError } from './config';

/** What differs between the two behaviours. Each flag is one row of the README's table. */
export interface Behaviour {
  /** The handler's second argument for a CloudEvent: the event's data (the seed) or the event itself. */
  readonly eventAsArgument: boolean;
  /** `{ headers }` with no body: the seed's 204, or faas-js-runtime's 200 with the whole object as JSON. */
  readonly headersWithoutBodyAsJson: boolean;
  /** A number or boolean returned directly: the seed's 204, or faas-js-runtime's (falsy 204, else an empty 200). */
  readonly scalarsAsEmpty200: boolean;
  /** Every answer allows every origin (`Access-Control-Allow-Origin: *`) unless the function has `cors()`. */
  readonly corsForEveryOrigin: boolean;
  /** Errors raised once the function ran are answered as text (the message at 4xx), not JSON. */
  readonly errorsAsText: boolean;
  /** A returned CloudEvent is answered in binary mode always, not in the mode the request came in. */
  readonly eventsAnsweredBinary: boolean;
  /** `context.contentType` is the raw Content-Type header (`application/json; charset=utf-8`), not the parsed media type. */
  readonly rawContentType: boolean;
  /** Metric labels exactly as faas-js-runtime prints them (`faas_instance="undefined"` without POD_NAME). */
  readonly faasMetricLabels: boolean;
}

export const COMPAT_MODES = ['faas-js-runtime'] as const;
export type Compat = (typeof COMPAT_MODES)[number];

const SEED: Behaviour = Object.freeze({
  eventAsArgument: false,
  headersWithoutBodyAsJson: false,
  scalarsAsEmpty200: false,
  corsForEveryOrigin: false,
  errorsAsText: false,
  eventsAnsweredBinary: false,
  rawContentType: false,
  faasMetricLabels: false,
});

const FAAS_JS_RUNTIME: Behaviour = Object.freeze({
  eventAsArgument: true,
  headersWithoutBodyAsJson: true,
  scalarsAsEmpty200: true,
  corsForEveryOrigin: true,
  errorsAsText: true,
  eventsAnsweredBinary: true,
  rawContentType: true,
  faasMetricLabels: true,
});

/** The behaviour for a `compat` setting: undefined (or empty) is funcrun's own. */
export function behaviourOf(compat: Compat | undefined): Behaviour {
  return compat === 'faas-js-runtime' ? FAAS_JS_RUNTIME : SEED;
}

/** `compat` from text (an option, a flag, FUNC_COMPAT); an empty value or `none` is funcrun's own behaviour. */
export function parseCompat(value: string, what: string): Compat | undefined {
  const text = value.trim().toLowerCase();
  if (text === '' || text === 'none' || text === 'funcrun') return undefined;
  if ((COMPAT_MODES as readonly string[]).includes(text)) return text as Compat;
  throw new ConfigError(`invalid ${what} '${value}': expected faas-js-runtime (or none)`);
}
