// Keeping secrets in: masking the request's secret fields (for logs) and redacting any secret
// value, in the forms it travels in, from every text that leaves (responses, errors, logs). The
// concern's parts are in secrets/, each a role:
//   fields.ts       the request's secrets, read beside the schema (maskSecrets, secretValues)
//   userinfo.ts     `user:password@` in endpoints and in free text
//   forms.ts        the forms a secret travels in besides itself (case, base64, hex, UTF-16...)
//   form-book.ts    which of those forms are made for a test's secrets, within budgets
//   matcher.ts      the folding both sides are seen through, and the Aho-Corasick matcher
//   generations.ts  the matchers built over the forms as they pile up, in turns of their own
//   view.ts         a decoded view of a text, mapped back to the text; UTF-8 of escaped bytes
//   decoders.ts     the escapes undone: JSON, percent, `\x` and octal, HTML references
//   hex-runs.ts     hex spaced by bytes, and what a cut leaves of it
//   views.ts        the views a text is searched in (layers of decoders), and the joined view
//   redactor.ts     the Redactor: a text searched in every view with every matcher, masked
//   mask.ts         the mask, and spans replaced by it
// Other modules import the concern from here.
export { MASK } from './secrets/mask';
export { maskSecrets, secretValues } from './secrets/fields';
export { endpointSecrets, maskEndpoint, maskUserinfo, userinfoSpans } from './secrets/userinfo';
export { Redactor } from './secrets/redactor';
