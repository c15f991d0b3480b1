// One in-process mailbox per organisation (docs/internals/design.md §1): the organisation is the unit that must
// see every spend of a budget (its windows are shared by all its agents), so its commands run one after
// another inside a process and its agents' purchases never race each other's window versions here.
// Across processes the versioned budget windows keep the same guarantee.
export class Mailboxes {
  private readonly tails = new Map<string, Promise<unknown>>();

  /**
   * Runs command after the agent's previous one. The next may start once this one calls `applied`
   * (its transaction's writes are visible to transactions started from then on: StoreTransactionOptions),
   * or else once it has settled.
   */
  run<T>(agentId: string, command: (applied: () => void) => Promise<T>): Promise<T> {
    const previous = this.tails.get(agentId) ?? Promise.resolve();
    let applied!: () => void;
    const appliedOrSettled = new Promise<void>((resolve) => (applied = resolve));
    const start = () => command(applied);
    const result = previous.then(start, start);
    result.then(applied, applied);
    const tail = appliedOrSettled;
    this.tails.set(agentId, tail);
    void tail.then(() => {
      if (this.tails.get(agentId) === tail) this.tails.delete(agentId);
    });
    return result;
  }
}
