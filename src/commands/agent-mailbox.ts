// One in-process mailbox per agent (DESIGN.md 1): an agent's commands run one after another inside
// a process, so its own purchases never race each other here. Across processes the versioned budget
// windows keep the same guarantee.
export class AgentMailboxes {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(agentId: string, command: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(agentId) ?? Promise.resolve();
    const result = previous.then(command, command);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(agentId, tail);
    void tail.then(() => {
      if (this.tails.get(agentId) === tail) this.tails.delete(agentId);
    });
    return result;
  }
}
