// Every error funcrun itself answers with, by the stable `code` its JSON body carries: clients and
// tests match the code, never the message's text. docs/errors.md lists the same table (a spec
// checks that the two agree). Errors a function throws carry no code of funcrun's.
export const ERROR_CODES = {
  FUNCRUN_NO_HOST: { status: 400, when: 'an HTTP/1.1 request without a Host header' },
  FUNCRUN_HOST_REPEATED: { status: 400, when: 'a request with more than one Host header' },
  FUNCRUN_MALFORMED_REQUEST: { status: 400, when: 'bytes that are not HTTP (node could not parse the request)' },
  FUNCRUN_REQUEST_TIMEOUT: {
    status: 408,
    when: 'the request (its headers or its body) came slower than the request timeout, or a body streamed to a function slower than minBodyRate (details: limit, setting)',
  },
  FUNCRUN_HEADERS_TOO_LARGE: { status: 431, when: "the request's headers are larger than node's limit" },
  FUNCRUN_CONNECT_REFUSED: { status: 405, when: 'a CONNECT request: a function is not a proxy' },
  FUNCRUN_EXPECTATION_FAILED: { status: 417, when: 'an Expect header other than 100-continue' },
  FUNCRUN_ORIGIN_NOT_ALLOWED: { status: 403, when: "a CORS preflight from an origin the module's cors() does not allow" },
  FUNCRUN_NOT_AUTHORIZED: { status: 403, when: "the module's authorize() returned false" },
  FUNCRUN_AUTHORIZE_TIMEOUT: { status: 504, when: 'authorize() did not settle within the timeout' },
  FUNCRUN_NOT_FOUND: {
    status: 404,
    when: "no route for the path and no handle() to fall back to, or a probe's or the metrics' path spelled otherwise (/health/./liveness)",
  },
  FUNCRUN_METHOD_NOT_ALLOWED: { status: 405, when: 'a route for the path, not for the method (the Allow header lists those it has)' },
  FUNCRUN_BODY_TOO_LARGE: {
    status: 413,
    when: 'the body is larger than its limit: bodyLimit, or uploadLimit for a multipart or streamed body (details: limit, setting)',
  },
  FUNCRUN_FILE_TOO_LARGE: { status: 413, when: 'multipart: a file is larger than fileSizeLimit (details: limit, setting)' },
  FUNCRUN_TOO_MANY_FILES: { status: 413, when: 'multipart: more files than filesLimit (details: limit, setting)' },
  FUNCRUN_TOO_MANY_FIELDS: { status: 413, when: 'multipart: more fields than fieldsLimit (details: limit, setting)' },
  FUNCRUN_TOO_MANY_PARTS: { status: 413, when: 'multipart: more parts than fieldsLimit and filesLimit together (details: limit, setting)' },
  FUNCRUN_FIELD_TOO_LARGE: {
    status: 413,
    when: "multipart: a field is larger than fieldSizeLimit, or the fields' names and values and the files' names and types together are larger than bodyLimit (details: limit, setting)",
  },
  FUNCRUN_PART_HEADER_TOO_LARGE: { status: 413, when: "multipart: a part's header is larger than partHeaderLimit (details: limit, setting)" },
  FUNCRUN_UPLOAD_DISK_FULL: {
    status: 503,
    when: 'temporary upload files would pass uploadDiskLimit, or the disk is full (ENOSPC, EDQUOT); Retry-After says when to try again',
  },
  FUNCRUN_INVALID_MULTIPART: {
    status: 400,
    when: 'a multipart/form-data body that does not parse: no boundary or two, a part without a name, a body that ends before its closing boundary',
  },
  FUNCRUN_BODY_INCOMPLETE: {
    status: 400,
    when: 'the connection broke before the body was complete (a client that only half-closes gets FUNCRUN_MALFORMED_REQUEST)',
  },
  FUNCRUN_TRANSFER_ENCODING: { status: 501, when: 'a Transfer-Encoding other than chunked' },
  FUNCRUN_CONTENT_ENCODING: { status: 415, when: 'a compressed (Content-Encoding) body' },
  FUNCRUN_UNSUPPORTED_CHARSET: { status: 415, when: 'a text body in a charset node cannot decode' },
  FUNCRUN_INVALID_TEXT: { status: 400, when: 'a text body that is not valid in its charset' },
  FUNCRUN_INVALID_JSON: { status: 400, when: 'a JSON body that does not parse, or nests too deep (details: position, line, column)' },
  FUNCRUN_INVALID_XML: { status: 400, when: 'an XML body that is not well-formed or past a bound (details: line, column)' },
  FUNCRUN_INVALID_EVENT: { status: 400, when: 'a CloudEvent with a missing or malformed attribute or data (details: attribute)' },
  FUNCRUN_UNSUPPORTED_EVENT_FORMAT: { status: 415, when: 'an application/cloudevents format other than JSON, or a batch to readEvent() in a fetch handler' },
  FUNCRUN_TIMEOUT: { status: 504, when: 'the function did not answer within the timeout' },
  FUNCRUN_FUNCTION_CRASHED: { status: 500, when: 'the function crashed the process (an uncaught exception in its invocation)' },
  FUNCRUN_NOT_READY: {
    status: 503,
    when: 'readiness: the module says it is not ready, the server is draining, the event loop runs late, or the idempotency store cannot be reached (details: reason)',
  },
  FUNCRUN_EVENT_REQUIRED: {
    status: 400,
    when: 'named functions: a request to / that is not a CloudEvent, or a plain request to an event-only function; fetch handlers: a request readEvent() or readEvents() finds no CloudEvent in',
  },
  FUNCRUN_NO_FUNCTION_FOR_EVENT: { status: 404, when: "named functions: no function for the event's ce-type" },
  FUNCRUN_AMBIGUOUS_EVENT: { status: 409, when: "named functions: more than one function for the event's ce-type" },
  FUNCRUN_BYTES_NOT_ACCEPTED: { status: 415, when: 'named functions: bytes for a function that takes JSON' },
  FUNCRUN_INVALID_INPUT: { status: 400, when: "named functions: input that violates the function's schema (details: violations)" },
  FUNCRUN_INVALID_QUERY: { status: 400, when: 'named functions: query parameter names that do not make an object' },
  FUNCRUN_INVALID_EVENT_DATA: {
    status: 400,
    when: "event contracts: an event's data violates its type's schema (details: type, violations, and index in a batch)",
  },
  FUNCRUN_UNDECLARED_EVENT_TYPE: { status: 400, when: 'event contracts: an event of a type the module does not declare, without passthrough (details: type)' },
  FUNCRUN_EVENT_KEY_TOO_LONG: { status: 400, when: "idempotency: the event's key (source and id, or the module's key) is longer than the key limit" },
  FUNCRUN_EVENT_CONFLICT: {
    status: 409,
    when: 'idempotency: another event with the same source and id (other type, subject or data) was delivered first; its answer is not given',
  },
  FUNCRUN_EVENT_IN_PROGRESS: { status: 429, when: 'idempotency: the same event is being handled by another delivery; Retry-After says when to try again' },
  FUNCRUN_STORE_UNAVAILABLE: { status: 503, when: 'idempotency: the store cannot be reached, so the event is not run; Retry-After says when to try again' },
  FUNCRUN_RETRY: { status: 503, when: 'the function returned retry(): deliver the event again after Retry-After (429 when it asked for 429)' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;
