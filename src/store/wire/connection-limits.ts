// Who may hold the listener's connections (docs/operate/analysts.md, "Limits"). Connections that
// have not authenticated are counted apart from those that have: past a small cap the oldest of
// them is closed to make room, so that anyone who can reach the port, without a password, can
// neither fill the listener nor keep a person with one out. Authenticated connections are capped
// per user, so that one user's pool cannot take every slot from the other.
import { CommandError } from './errors.ts';

/** What the limits read of a connection (call.ts Connection has it): its id, and its user once authenticated. */
interface Counted {
  readonly id: number;
  readonly user?: { readonly user: string };
}

export class ConnectionLimits {
  readonly maxUnauthenticated: number;
  readonly maxPerUser: number;
  /** Connections waiting to authenticate, oldest first (a Map keeps insertion order), each with how to close it. */
  readonly #waiting = new Map<number, () => void>();
  /** The connections each user holds authenticated. */
  readonly #users = new Map<string, Set<number>>();

  constructor(maxUnauthenticated: number, maxPerUser: number) {
    this.maxUnauthenticated = maxUnauthenticated;
    this.maxPerUser = maxPerUser;
  }

  /**
   * A connection that has just opened, or logged out: it waits to authenticate. Past the cap the
   * oldest waiting connection is closed, not the newcomer: refusing newcomers would let whoever
   * holds the slots keep everyone else out for good.
   */
  waiting(conn: Counted, close: () => void): void {
    this.#leaveUser(conn);
    this.#waiting.delete(conn.id);
    this.#waiting.set(conn.id, close);
    for (const [id, closeOldest] of this.#waiting) {
      if (this.#waiting.size <= this.maxUnauthenticated) break;
      this.#waiting.delete(id);
      closeOldest();
    }
  }

  /** Called before conn becomes user's; throws (and conn stays as it was) when user holds its cap already. */
  authenticate(conn: Counted, user: string): void {
    const held = this.#users.get(user) ?? new Set<number>();
    if (!held.has(conn.id) && held.size >= this.maxPerUser) {
      throw new CommandError(
        'AuthenticationFailed',
        `user ${user} already holds ${held.size} authenticated connections, the most one user may: close some (or lower the client's maxPoolSize)`,
      );
    }
    this.#leaveUser(conn);
    held.add(conn.id);
    this.#users.set(user, held);
    this.#waiting.delete(conn.id);
  }

  /** Called before conn's user is forgotten (logout); the listener then calls waiting(). */
  logout(conn: Counted): void {
    this.#leaveUser(conn);
  }

  closed(conn: Counted): void {
    this.#waiting.delete(conn.id);
    this.#leaveUser(conn);
  }

  get unauthenticated(): number {
    return this.#waiting.size;
  }

  authenticated(user: string): number {
    return this.#users.get(user)?.size ?? 0;
  }

  #leaveUser(conn: Counted): void {
    const user = conn.user?.user;
    if (user === undefined) return;
    const held = this.#users.get(user);
    held?.delete(conn.id);
    if (held?.size === 0) this.#users.delete(user);
  }
}
