// What one read-only user's (the analyst's) connections may hold in the web process at once: the
// messages they sent that are still arriving, waiting or running, and the replies the client has not
// taken yet (docs/operate/analysts.md, "Connection limits"). Each connection alone is bounded (a message
// of up to 48 MB, one reply at a time), but a user may hold 100 connections: without a bound over all of
// them, an analyst's tool could make the web process hold gigabytes. A message reserves its size, and at
// least a reply batch's (cursors.ts), when its length arrives, and gives them back once its reply has
// been written out; past the budget the user's connections are not read until some come back.
// The service user has none: its open transaction holds the store while its other operations wait,
// and a budget could keep out the transaction's next operation.

export class InFlight {
  readonly maxBytes: number;
  readonly #held = new Map<string, number>();
  readonly #waiting = new Map<string, Set<() => void>>();

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /**
   * Reserves bytes for user; or returns false, and calls wake once the user's bytes have gone down. A
   * user holding nothing may take any amount, so that one message always goes through.
   */
  take(user: string, bytes: number, wake: () => void): boolean {
    const held = this.#held.get(user) ?? 0;
    if (held > 0 && held + bytes > this.maxBytes) {
      const waiting = this.#waiting.get(user) ?? new Set();
      this.#waiting.set(user, waiting.add(wake));
      return false;
    }
    this.#held.set(user, held + bytes);
    return true;
  }

  give(user: string, bytes: number): void {
    const held = (this.#held.get(user) ?? 0) - bytes;
    if (held > 0) this.#held.set(user, held);
    else this.#held.delete(user);
    const waiting = this.#waiting.get(user);
    this.#waiting.delete(user);
    for (const wake of waiting ?? []) wake();
  }

  /** A closed connection waits no more. */
  forget(wake: () => void): void {
    for (const waiting of this.#waiting.values()) waiting.delete(wake);
  }
}
