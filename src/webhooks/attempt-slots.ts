// A worker process's caps on the delivery attempts in flight: per endpoint, per organisation and per
// destination host (docs/reference/decisions.md, "Webhook attempts in flight").
//
// Why: a worker runs at most 10 attempts at once (jobs.ts), and an attempt to a receiver that never
// answers holds its slot for the whole request timeout (10 s, docs/internals/design.md §3). Whatever
// shares a cap can take no more of the 10 than that cap, so the rest keep flowing:
//   endpoint      2  one hanging endpoint with a backlog. One in flight would serialise even a healthy
//                    receiver behind its own latency; two keep it busy.
//   organisation  4  one organisation's many endpoints at a receiver that hangs (5 endpoints at 2 each
//                    would be all 10).
//   host          4  many organisations' endpoints at one host that hangs (a shared receiving service).
//                    The host is the URL's hostname: the port is 443 in production (contract §6.6), and
//                    the names one machine answers under are not all known before DNS is asked.
// With 4 of 10, two such causes hanging at once still leave 2 slots to everyone else. With W worker
// processes an endpoint sees at most 2 * W requests at once, a host 4 * W. The caps are per process
// (no shared counter, nothing to clean up when a worker dies); the lease on each delivery
// (deliver.ts step 1) still makes sure no attempt is made twice.
//
// An attempt over any cap is not made and not waited for: it returns at once (its Agenda job ends, so
// it holds no slot and no lock) and the delivery stays PENDING and due; its endpoint is noted as
// waiting. When an attempt in this process finishes, the waiting endpoints that now have room under all
// three caps get their oldest due deliveries put back on the job schedule (resumeWaiting in
// deliver.ts), oldest waiting first; a process that dies before that leaves them to the recurring
// sweep, which skips what is at its cap here.
import type { AppDeps } from '../app-deps.ts';

export const MAX_IN_FLIGHT_PER_ENDPOINT = 2;
export const MAX_IN_FLIGHT_PER_ORGANIZATION = 4;
export const MAX_IN_FLIGHT_PER_HOST = 4;

/** What an attempt counts against. */
export interface SlotKey {
  endpointId: string;
  organizationId: string;
  /** The endpoint URL's hostname (lower case, as the WHATWG parser gives it). */
  host: string;
}

export type Scope = 'endpoint' | 'organization' | 'host';
export type Caps = Record<Scope, number>;

const SCOPES: readonly Scope[] = ['endpoint', 'organization', 'host'];
const FIELD = { endpoint: 'endpointId', organization: 'organizationId', host: 'host' } as const;

/** The hostname a slot counts against, or the whole string when it does not parse. */
export function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return url;
  }
}

export class AttemptSlots {
  readonly caps: Readonly<Caps>;
  readonly #inFlight: Record<Scope, Map<string, number>> = { endpoint: new Map(), organization: new Map(), host: new Map() };
  /** The key of each endpoint with an attempt in flight here. */
  readonly #keys = new Map<string, { key: SlotKey; n: number }>();
  /** Endpoints with an attempt turned away since their backlog was last looked at, oldest first. */
  readonly #waiting = new Map<string, SlotKey>();

  constructor(caps: Caps) {
    for (const scope of SCOPES) {
      if (!Number.isInteger(caps[scope]) || caps[scope] < 1) throw new RangeError(`the in-flight cap per ${scope} is a whole number >= 1`);
    }
    this.caps = { ...caps };
  }

  /**
   * Takes a slot under every cap; null when taken. Otherwise the first cap that is full (and the
   * endpoint noted as waiting): nothing was taken.
   */
  take(key: SlotKey): Scope | null {
    const full = SCOPES.find((scope) => this.inFlight(scope, key[FIELD[scope]]) >= this.caps[scope]);
    if (full) {
      this.markWaiting(key);
      return full;
    }
    for (const scope of SCOPES) this.#inFlight[scope].set(key[FIELD[scope]], this.inFlight(scope, key[FIELD[scope]]) + 1);
    const held = this.#keys.get(key.endpointId);
    this.#keys.set(key.endpointId, { key, n: (held?.n ?? 0) + 1 });
    return null;
  }

  /** Gives back a slot taken with the same key; true when attempts were turned away meanwhile (resume them). */
  give(key: SlotKey): boolean {
    for (const scope of SCOPES) {
      const map = this.#inFlight[scope];
      const n = (map.get(key[FIELD[scope]]) ?? 1) - 1;
      if (n <= 0) map.delete(key[FIELD[scope]]);
      else map.set(key[FIELD[scope]], n);
    }
    const held = this.#keys.get(key.endpointId);
    if (held && held.n > 1) held.n--;
    else this.#keys.delete(key.endpointId);
    return this.#waiting.size > 0;
  }

  inFlight(scope: Scope, id: string): number {
    return this.#inFlight[scope].get(id) ?? 0;
  }

  /** How many more attempts this key could start now, counting `reserved` as already started. */
  room(key: SlotKey, reserved?: Reservations): number {
    return Math.min(...SCOPES.map((scope) => this.caps[scope] - this.inFlight(scope, key[FIELD[scope]]) - (reserved?.of(scope, key[FIELD[scope]]) ?? 0)));
  }

  /** The waiting endpoints, oldest first. */
  waiting(): SlotKey[] {
    return [...this.#waiting.values()];
  }

  /** Its backlog is being looked at: an attempt turned away from now on marks it again. */
  clearWaiting(endpointId: string): void {
    this.#waiting.delete(endpointId);
  }

  /** More may be waiting than was just resumed: to the back of the line. */
  markWaiting(key: SlotKey): void {
    this.#waiting.delete(key.endpointId);
    this.#waiting.set(key.endpointId, key);
  }

  /**
   * What the sweep should leave out, its attempts being bound to be turned away here: the endpoints and
   * organisations at their cap, and the endpoints known (in flight or waiting) to be at a host at its cap.
   */
  saturated(): { endpointIds: string[]; organizationIds: string[] } {
    const full = (scope: Scope) => [...this.#inFlight[scope]].filter(([, n]) => n >= this.caps[scope]).map(([id]) => id);
    const hosts = new Set(full('host'));
    const atFullHost = [...this.#keys.values()].map((h) => h.key).concat(this.waiting()).filter((k) => hosts.has(k.host)).map((k) => k.endpointId);
    return { endpointIds: [...new Set([...full('endpoint'), ...atFullHost])], organizationIds: full('organization') };
  }
}

/** Attempts about to start (scheduled, not yet running) counted against the caps while resuming. */
export class Reservations {
  readonly #n = new Map<string, number>();
  of(scope: Scope, id: string): number {
    return this.#n.get(`${scope}:${id}`) ?? 0;
  }
  add(key: SlotKey, n: number): void {
    for (const scope of SCOPES) this.#n.set(`${scope}:${key[FIELD[scope]]}`, this.of(scope, key[FIELD[scope]]) + n);
  }
}

// One per deps object: one per process in production, one per test app in a test process.
const slots = new WeakMap<AppDeps, AttemptSlots>();

export function attemptSlots(deps: AppDeps): AttemptSlots {
  let s = slots.get(deps);
  if (!s) {
    s = new AttemptSlots({ endpoint: MAX_IN_FLIGHT_PER_ENDPOINT, organization: MAX_IN_FLIGHT_PER_ORGANIZATION, host: MAX_IN_FLIGHT_PER_HOST });
    slots.set(deps, s);
  }
  return s;
}
