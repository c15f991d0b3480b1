// A FIFO async mutex. Releasing hands the lock straight to the next waiter, so `locked`
// is false only when nobody holds it and nobody waits for it.
export class Mutex {
  #locked = false;
  #waiters: Array<() => void> = [];

  get locked(): boolean {
    return this.#locked;
  }

  acquire(): Promise<void> {
    if (!this.#locked) {
      this.#locked = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#locked = false;
  }
}
