// Event contracts: per CloudEvent `type`, the schema of the event's data, as a JSON Schema or a
// Standard Schema validator, and the types a handler gets from them. Types only, but for
// `defineEvents`, which returns what it is given: its work is to infer the declaration's literal
// types, so that a JSON Schema needs no `as const`.
import type { CloudEvent } from 'cloudevents';
import type { Context } from './context';
import type { CloudEventFunctionReturn } from './types';

/**
 * The Standard Schema interface, version 1 (https://standardschema.dev), copied as its spec asks:
 * Zod, Valibot and ArkType schemas implement it, and funcrun depends on none of them.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

// The spec's own shape, an interface and a namespace of the same name, so that `StandardSchemaV1.InferOutput<S>`
// reads as its users know it.
// eslint-disable-next-line no-redeclare, @typescript-eslint/no-namespace
export declare namespace StandardSchemaV1 {
  interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    readonly types?: Types<Input, Output> | undefined;
  }
  type Result<Output> = SuccessResult<Output> | FailureResult;
  interface SuccessResult<Output> {
    readonly value: Output;
    readonly issues?: undefined;
  }
  interface FailureResult {
    readonly issues: ReadonlyArray<Issue>;
  }
  interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }
  interface PathSegment {
    readonly key: PropertyKey;
  }
  interface Types<Input = unknown, Output = Input> {
    readonly input: Input;
    readonly output: Output;
  }
  type InferInput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['input'];
  type InferOutput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['output'];
}

/**
 * A JSON Schema, as an object literal. `'~standard'` is left out so that a Standard Schema is
 * never taken for one, and `call` so that a function (a validator passed by mistake) is not either.
 */
export interface JsonSchema {
  readonly [keyword: string]: unknown;
  readonly '~standard'?: never;
  readonly call?: never;
}

/** What a declared event type's data is checked against. */
export type EventSchema = JsonSchema | StandardSchemaV1;

/** The event contracts of a module: its `events` export, made with `defineEvents`. */
export interface EventDeclaration {
  /** Per CloudEvent `type`, the schema of the event's data. */
  readonly types?: { readonly [type: string]: EventSchema };
  /** True: events of types not declared reach the handler too, their data unchecked. */
  readonly passthrough?: boolean;
  /**
   * True: a duplicate delivery (the same `source` and `id`, or the same `key`) gets the first
   * delivery's answer without running again, or a 429 while the first runs (docs/cloudevents.md).
   */
  readonly idempotency?: boolean | { readonly key?: (event: CloudEvent<unknown>) => string };
}

/**
 * Returns the declaration it is given. A `const` type parameter keeps its literal types, which
 * type the handler's events: `EventHandler<typeof events>`. A key the declaration does not know
 * (`passThrough`) is an error, as it would be in an annotated object literal.
 */
export function defineEvents<const D extends EventDeclaration>(declaration: D & { readonly [K in Exclude<keyof D, keyof EventDeclaration>]: never }): D {
  return declaration;
}

/** The data a schema admits: a Standard Schema's output type, or what a JSON Schema describes. */
export type DataOf<S> = S extends StandardSchemaV1 ? StandardSchemaV1.InferOutput<S> : FromSchema<S>;

type TypesOf<D> = D extends { readonly types: infer T } ? T : Record<never, never>;

/** An event of type T: the SDK's CloudEvent, its `type` that literal and its `data` there. */
export type TypedEvent<T extends string, Data> = CloudEvent<Data> & { type: T; data: Data };

/**
 * The events a handler of declaration D receives: one member per declared type, so that
 * `switch (event.type)` narrows `event.data`. With `passthrough: true` any other event arrives
 * too, as `CloudEvent<unknown>`: its `type` is any string, so it stays in every `case` and the
 * data there is `unknown` until the handler's own check narrows it.
 */
export type EventsOf<D extends EventDeclaration> =
  | { [T in keyof TypesOf<D> & string]: TypedEvent<T, DataOf<TypesOf<D>[T]>> }[keyof TypesOf<D> & string]
  | (D extends { readonly passthrough: true } ? CloudEvent<unknown> : never);

/** The CloudEvent types declared by D: the keys of its `types`. */
export type EventType<D extends EventDeclaration> = keyof TypesOf<D> & string;

/** The one event of declared type T: for a named function that takes the whole event (`cloudEvent: true`). */
export type EventOf<D extends EventDeclaration, T extends keyof TypesOf<D> & string> = TypedEvent<T, DataFor<D, T>>;

/** The data of an event of declared type T. */
export type DataFor<D extends EventDeclaration, T extends keyof TypesOf<D> & string> = DataOf<TypesOf<D>[T]>;

/** The data of any event the handler receives. */
type DataUnion<D extends EventDeclaration> = EventsOf<D>['data'];

/** The context of an event handler: it receives events only, so `cloudevent` is always there. */
export interface EventContext<D extends EventDeclaration> extends Context<unknown> {
  cloudevent: EventsOf<D>;
}

/**
 * A handler of the events declared by D (`EventHandler<typeof events>`): `(context, data)`, where
 * `context.cloudevent` is the event, typed by its `type`. R is the returned event's data type.
 */
export interface EventHandler<D extends EventDeclaration, R = unknown> {
  (context: EventContext<D>, data: DataUnion<D>): CloudEventFunctionReturn<R>;
}

// ---------------------------------------------------------------------------------------------
// FromSchema: a JSON Schema's TypeScript type, for the keywords that decide a value's shape.

/** How many levels of nested schemas are typed; deeper ones are `unknown`. */
type Levels = [never, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20];

interface Primitives {
  string: string;
  number: number;
  integer: number;
  boolean: boolean;
  null: null;
}

type Depth = Levels[number];

/**
 * The TypeScript type of the values JSON Schema S admits, as far as its `type`, `enum`, `const`,
 * `properties`, `required`, `additionalProperties`, `items`, `anyOf`, `oneOf`, `allOf` and
 * `nullable` say; any other schema (`$ref`, `not`, `if`) is `unknown`, as is a schema nested
 * deeper than 20 levels.
 */
export type FromSchema<S, Level extends Depth = 20> = [Level] extends [never]
  ? unknown
  : S extends true
    ? unknown
    : S extends false
      ? never
      : S extends object
        ? Nullable<S, Own<S, Levels[Level]> & Alternatives<S, Levels[Level]> & Everything<S, Levels[Level]>>
        : unknown;

/** What `type`, `enum` and `const` say. */
type Own<S, Level extends Depth> = (S extends { readonly const: infer C } ? C : unknown) &
  (S extends { readonly enum: infer E extends readonly unknown[] } ? E[number] : unknown) &
  (S extends { readonly type: infer T } ? OfTypes<S, T extends readonly unknown[] ? T[number] : T, Level> : unknown);

/** A union over the names in `type` (a name or an array of names). */
type OfTypes<S, Name, Level extends Depth> = string extends Name
  ? unknown
  : Name extends keyof Primitives
    ? Primitives[Name]
    : Name extends 'array'
      ? ArrayOf<S, Level>
      : Name extends 'object'
        ? ObjectOf<S, Level>
        : unknown;

/** Items of one schema; tuples (`prefixItems`, or `items` as an array) are left at `unknown[]`. */
type ArrayOf<S, Level extends Depth> = S extends { readonly prefixItems: unknown }
  ? unknown[]
  : S extends { readonly items: infer I }
    ? I extends readonly unknown[]
      ? unknown[]
      : FromSchema<I, Level>[]
    : unknown[];

type Keys<S, Key extends string> = S extends { readonly [K in Key]: infer V extends readonly unknown[] } ? V[number] & string : never;

type RequiredOf<S> = string extends Keys<S, 'required'> ? never : Keys<S, 'required'>;

type PropertiesOf<S> = S extends { readonly properties: infer P extends object } ? P : Record<never, never>;

type ObjectOf<S, Level extends Depth> = Flat<
  { -readonly [K in keyof PropertiesOf<S> as K extends RequiredOf<S> ? K : never]: FromSchema<PropertiesOf<S>[K], Level> } & {
    -readonly [K in keyof PropertiesOf<S> as K extends RequiredOf<S> ? never : K]?: FromSchema<PropertiesOf<S>[K], Level>;
  } & { -readonly [K in Exclude<RequiredOf<S>, keyof PropertiesOf<S>>]: unknown } & Additional<S, Level>
>;

/**
 * Keys past `properties`: none with `false`, that schema's with a schema, anything by default, as
 * an index signature beside the properties, which keep their own types. `patternProperties`
 * admits keys the type cannot name: anything, then.
 */
type Additional<S, Level extends Depth> = S extends { readonly patternProperties: unknown }
  ? { [key: string]: unknown }
  : S extends { readonly additionalProperties: infer A }
    ? A extends false
      ? unknown
      : A extends object
        ? { [key: string]: FromSchema<A, Level> }
        : { [key: string]: unknown }
    : { [key: string]: unknown };

// One object type, not an intersection of four, where a reader sees it.
type Flat<T> = { [K in keyof T]: T[K] } & {};

/** A member of `anyOf`, `oneOf` or `allOf` without its own `type` or `properties` takes its parent's. */
type Inherit<Parent, Member> = Member &
  ('type' extends keyof Member ? unknown : Parent extends { readonly type: infer T } ? { readonly type: T } : unknown) &
  ('properties' extends keyof Member ? unknown : Parent extends { readonly properties: infer P } ? { readonly properties: P } : unknown);

type Alternatives<S, Level extends Depth> = S extends { readonly anyOf: infer A extends readonly unknown[] }
  ? Union<S, A, Level>
  : S extends { readonly oneOf: infer A extends readonly unknown[] }
    ? Union<S, A, Level>
    : unknown;

type Union<S, Members extends readonly unknown[], Level extends Depth> = { [I in keyof Members]: FromSchema<Inherit<S, Members[I]>, Level> }[number];

type Everything<S, Level extends Depth> = S extends { readonly allOf: infer A extends readonly unknown[] } ? Intersection<S, A, Level> : unknown;

type Intersection<S, Members extends readonly unknown[], Level extends Depth> = Members extends readonly [infer First, ...infer Rest]
  ? FromSchema<Inherit<S, First>, Level> & Intersection<S, Rest, Level>
  : unknown;

/** OpenAPI's `nullable: true`, which ajv knows too. */
type Nullable<S, T> = S extends { readonly nullable: true } ? T | null : T;
