// Mistakes the exported types must catch. Each line marked `error` must fail to compile.
import type { Context, Function, HTTPFunction, LogLevel, StructuredReturn } from 'funcrun';

export const wrongStatus: StructuredReturn = { statusCode: '200' }; // error: statusCode is a number
export const wrongLevel: LogLevel = 'verbose'; // error: not a log level
export const wrongContext: HTTPFunction = (context: Context) => context.nosuchmethod(); // error: unknown member used as a function
export const wrongModule: Function = { handle: 'not a function' }; // error: handle is a function
export const wrongChain: HTTPFunction = (context) => context.cloudEventResponse({}).type(5).response(); // error: type takes a string
