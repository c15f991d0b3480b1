// A worker process's cap on the delivery attempts in flight to any one endpoint.
//
// Why: a worker runs at most 10 attempts at once (jobs.ts), and an attempt to a receiver that never
// answers holds its slot for the whole request timeout (10 s, docs/internals/design.md §3). Without a
// cap, one hanging endpoint with a backlog fills every slot, and every other organisation's endpoints
// wait behind it. With it, a hanging endpoint holds at most MAX_IN_FLIGHT_PER_ENDPOINT of a worker's
// slots and the rest keep flowing.
//
// Why 2: one in flight would serialise even a healthy receiver behind its own latency (and a single
// slow answer would stall it); two keep a healthy receiver busy while leaving 8 of the 10 slots to
// everyone else, so four endpoints can hang at once before anyone else waits. It also bounds what one
// receiver gets from one worker: with W worker processes an endpoint sees at most 2 * W requests at
// once. The cap is per process (no shared counter, nothing to clean up when a worker dies); the
// lease on each delivery (deliver.ts step 1) still makes sure no attempt is made twice.
//
// An attempt over the cap is not made and not waited for: it returns at once (its Agenda job ends, so
// it holds no slot and no lock) and the delivery stays PENDING and due. When one of the endpoint's
// attempts in this process finishes, the endpoint's oldest due deliveries are put back on the job
// schedule, as many as there are free slots (resumeEndpoint in deliver.ts); a process that dies before
// that leaves them to the recurring sweep, which skips endpoints that are at their cap.
import type { AppDeps } from '../app-deps.ts';

export const MAX_IN_FLIGHT_PER_ENDPOINT = 2;

export class EndpointSlots {
  readonly cap: number;
  readonly #inFlight = new Map<string, number>();
  /** Endpoints with an attempt turned away since their backlog was last looked at. */
  readonly #waiting = new Set<string>();

  constructor(cap: number) {
    if (!Number.isInteger(cap) || cap < 1) throw new RangeError('the in-flight cap per endpoint is a whole number >= 1');
    this.cap = cap;
  }

  /** Takes one of the endpoint's slots; false (and the endpoint marked as waiting) when all are taken. */
  take(endpointId: string): boolean {
    const n = this.#inFlight.get(endpointId) ?? 0;
    if (n >= this.cap) {
      this.#waiting.add(endpointId);
      return false;
    }
    this.#inFlight.set(endpointId, n + 1);
    return true;
  }

  /** Gives a slot back; true when attempts were turned away meanwhile (so its backlog should be resumed). */
  give(endpointId: string): boolean {
    const n = (this.#inFlight.get(endpointId) ?? 1) - 1;
    if (n <= 0) this.#inFlight.delete(endpointId);
    else this.#inFlight.set(endpointId, n);
    return this.#waiting.has(endpointId);
  }

  /** Its backlog is being looked at: an attempt turned away from now on marks it again. */
  clearWaiting(endpointId: string): void {
    this.#waiting.delete(endpointId);
  }

  /** More may be waiting than was just resumed. */
  markWaiting(endpointId: string): void {
    this.#waiting.add(endpointId);
  }

  inFlight(endpointId: string): number {
    return this.#inFlight.get(endpointId) ?? 0;
  }

  free(endpointId: string): number {
    return this.cap - this.inFlight(endpointId);
  }

  /** Endpoints with every slot taken in this process. */
  saturated(): string[] {
    return [...this.#inFlight].filter(([, n]) => n >= this.cap).map(([id]) => id);
  }
}

// One per deps object: one per process in production, one per test app in a test process.
const slots = new WeakMap<AppDeps, EndpointSlots>();

export function endpointSlots(deps: AppDeps): EndpointSlots {
  let s = slots.get(deps);
  if (!s) {
    s = new EndpointSlots(MAX_IN_FLIGHT_PER_ENDPOINT);
    slots.set(deps, s);
  }
  return s;
}
