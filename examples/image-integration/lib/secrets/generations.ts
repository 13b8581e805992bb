// The matchers a Redactor searches with, built over the forms as they pile up: the forms added since
// the last build get matchers of their own, merged with the last ones while those are no bigger, so
// a form is built into a matcher a few times in all, not once per secret added. Each matcher is
// built in a turn of the event loop of its own (Turns), so that tests that start together leave
// room between their builds for a liveness probe or a connection.
import { KINDS, type FormLists, type Kind } from './form-book';
import { Matcher } from './matcher';

/** The matchers over the forms added up to some point: `size` characters of forms in all. */
export interface Generation {
  forms: FormLists;
  size: number;
  matchers: Partial<Record<Kind, Matcher>>;
}

/** The generations built, and the one being built, a matcher at a time. */
export class Generations {
  // A generation whose matchers are being built, one per turn; the generations it merges are out of #built meanwhile.
  #building: Generation | undefined;
  readonly #built: Generation[] = [];

  /** Whether a generation is half built. */
  get building(): boolean {
    return this.#building !== undefined;
  }

  /** The generations built, oldest (and biggest) first. */
  get built(): readonly Generation[] {
    return this.#built;
  }

  /**
   * Builds one matcher of the generation over the forms made since the last (`take` hands them
   * over when a generation begins): the pending forms, merged with the last generation while it is
   * no bigger, one kind at a time.
   */
  buildOne(take: () => { forms: FormLists; size: number }): void {
    if (this.#building === undefined) {
      const generations = this.#built;
      let { forms, size } = take();
      while (generations.length > 0 && generations[generations.length - 1].size <= size) {
        const last = generations.pop()!;
        forms = {
          values: [...last.forms.values, ...forms.values],
          short: [...last.forms.short, ...forms.short],
          joined: [...last.forms.joined, ...forms.joined],
        };
        size += last.size;
      }
      this.#building = { forms, size, matchers: {} };
    }
    const building = this.#building;
    const kind = KINDS.find((k) => building.forms[k].length > 0 && building.matchers[k] === undefined);
    if (kind !== undefined) building.matchers[kind] = new Matcher(building.forms[kind]);
    if (KINDS.every((k) => building.forms[k].length === 0 || building.matchers[k] !== undefined)) {
      this.#built.push(building);
      this.#building = undefined;
    }
  }
}

/**
 * Work that waits its turn: one piece per turn of the event loop, each in a setImmediate queued
 * when the one before it is done, so between two pieces the loop polls once (a liveness probe is
 * answered, a connection is made). Tests that start together build their matchers one by one so.
 */
class Turns {
  #last: Promise<unknown> = Promise.resolve();

  take<T>(work: () => T): Promise<T> {
    const turn = this.#last.then(
      () =>
        new Promise<T>((resolve, reject) =>
          setImmediate(() => {
            try {
              resolve(work());
            } catch (err) {
              reject(err);
            }
          }),
        ),
    );
    this.#last = turn.catch(() => undefined);
    return turn;
  }
}

/** The turns every Redactor of the process builds in, one piece at a time. */
export const buildTurns = new Turns();
