// The organisation actors of a process (docs/internals/design.md §1): each organisation has one mailbox
// (mailboxes.ts), so its commands run one after another here, and a small memory that the next command
// reads instead of the store. What an actor remembers is only ever a guess that the store confirms: the
// record that relies on it writes at the version remembered, so a guess gone stale (another process
// wrote meanwhile) is a VersionConflict, and the handler forgets and loads again for its retry.
//
// Bounded: each organisation's memory weighs what `weigh` says (1 by default), and past `limit` in all the
// least recently used organisations are forgotten (a forgotten actor loads from the store at its next command).
import { Mailboxes } from './mailboxes.ts';

export class OrganizationActors<Memory extends object> {
  readonly #mailboxes = new Mailboxes();
  readonly #memory = new Map<string, { facts: Partial<Memory>; weight: number }>();
  readonly #weigh: (facts: Partial<Memory>) => number;
  #weight = 0;
  readonly limit: number;

  constructor(limit = 10_000, weigh: (facts: Partial<Memory>) => number = () => 1) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError('an actor limit is a whole number >= 1');
    this.limit = limit;
    this.#weigh = weigh;
  }

  /** Runs command after the organisation's previous one (Mailboxes.run). */
  run<T>(organizationId: string, command: (applied: () => void) => Promise<T>): Promise<T> {
    return this.#mailboxes.run(organizationId, command);
  }

  /** What the organisation's actor remembers (empty when nothing, or after it was forgotten). */
  memory(organizationId: string): Readonly<Partial<Memory>> {
    return this.#memory.get(organizationId)?.facts ?? ({} as Partial<Memory>);
  }

  remember(organizationId: string, facts: Partial<Memory>): void {
    const merged = { ...this.#memory.get(organizationId)?.facts, ...facts };
    // Deleted and set again: the Map's order is then the order of last use.
    this.forget(organizationId);
    const weight = this.#weigh(merged);
    this.#memory.set(organizationId, { facts: merged, weight });
    this.#weight += weight;
    while (this.#weight > this.limit && this.#memory.size > 1) this.forget(this.#memory.keys().next().value!);
  }

  forget(organizationId: string): void {
    const known = this.#memory.get(organizationId);
    if (known === undefined) return;
    this.#memory.delete(organizationId);
    this.#weight -= known.weight;
  }

  /** Organisations remembered now (for tests and metrics). */
  get size(): number {
    return this.#memory.size;
  }
}
