// One delivery attempt (docs/reference/contract.md §6.3-6.6), in five steps. HTTP happens outside any transaction.
//
//   0. Take a slot in this process under the caps per endpoint, organisation and destination host
//      (attempt-slots.ts): over any of them, nothing is claimed or sent and the attempt returns
//      DEFERRED at once, the delivery still due; it is put back on the schedule when an attempt here
//      finishes and leaves room under all three.
//   1. Claim: one findOneAndUpdate takes a PENDING, due delivery whose lease is free and gives it a
//      lease token, so two workers (or a per-attempt job racing the sweep) never send the same
//      attempt at once. A worker that dies mid-attempt loses its lease after WEBHOOK_ATTEMPT_LEASE (config.ts) and the sweep
//      makes the attempt again (at least once, docs/reference/contract.md §6.3 rule 1).
//   2. Re-read the endpoint: revoked, or disabled (except for `webhook.test`), means the delivery
//      is CANCELLED and nothing is sent (docs/integrate/webhooks.md: a re-enabled endpoint gets no old deliveries).
//   3. Decrypt the signing secrets: current, plus previous while its 24-hour overlap lasts.
//   4. Sign the stored body bytes with a fresh timestamp (6.3 rule 3, 6.4) and send them with
//      send.ts, which re-checks the destination rules (6.6) against a fresh DNS answer and connects
//      only to the addresses it checked.
//   5. Record the outcome on the delivery (while still holding the lease) and on the endpoint, in
//      one transaction, then schedule the next attempt (6.5) if there is one. Failures never change
//      the endpoint's status.
import type { AppDeps } from '../app-deps.ts';
import { runCommand } from '../commands/run-command.ts';
import { newRandomId } from '../ids.ts';
import type { StoreSession } from '../store/store.ts';
import { NO_LEASE, webhookCollections, type DeliveryStatus, type WebhookDeliveryDoc, type WebhookEndpointDoc } from './documents.ts';
import { attemptSlots, hostOf, Reservations, type Scope, type SlotKey } from './attempt-slots.ts';
import { scheduleAttempts } from './queue.ts';
import { encryptionKeyOrNull, stopSignal, webhookRuntime } from './runtime.ts';
import { nextAttemptAt, signingRetryAt } from './schedule.ts';
import { decryptSecret, SecretDecryptionError } from './secrets.ts';
import { ABANDONED, type AttemptResult } from './send.ts';
import { deliveryHeaders } from './signing.ts';
import { webhookAttempted } from '../metrics/metrics.ts';

/** Not one of send.ts's classes: the worker could not sign (no usable WEBHOOK_ENCRYPTION_KEY). */
export const SIGNING_UNAVAILABLE = 'SIGNING_UNAVAILABLE';

export type AttemptOutcome =
  | { kind: 'NOT_DUE' }
  | { kind: 'DEFERRED'; endpointId: string; organizationId: string; scope: Scope }
  | { kind: 'CANCELLED' }
  | { kind: 'LOST_LEASE' }
  | { kind: 'ABANDONED' }
  | { kind: 'ATTEMPTED'; attempt: number; status: DeliveryStatus; result: AttemptResult; nextAttemptAt: Date | null };

/**
 * The secrets that sign right now, newest first (two entries during a rotation overlap). Throws when
 * the current one cannot be opened. A previous one that cannot be opened is left out: after
 * WEBHOOK_ENCRYPTION_KEY changes, the rotation the docs ask for leaves the old secret, sealed under
 * the old key, as `previous` for 24 hours, and the new secret alone must sign meanwhile.
 */
export function signingSecrets(endpoint: WebhookEndpointDoc, key: Buffer, now: Date): string[] {
  const s = endpoint.secrets;
  if (!s) return [];
  const secrets = [decryptSecret(key, s.current, endpoint._id)];
  if (s.previous && s.previousExpiresAt && s.previousExpiresAt.getTime() > now.getTime()) {
    try {
      secrets.push(decryptSecret(key, s.previous, endpoint._id));
    } catch (err) {
      if (!(err instanceof SecretDecryptionError)) throw err;
    }
  }
  return secrets;
}

/**
 * REVOKED receives nothing more. DISABLED receives only `webhook.test` deliveries, so a receiver
 * can be checked before the endpoint is enabled again; its other deliveries are cancelled, and so is
 * one whose event happened before the endpoint was last enabled again, so that re-enabling does not
 * replay old traffic: one pending when it was disabled that an attempt held then (one in flight, or a
 * dead worker's lease), or one of an event dispatched late, after the endpoint was enabled again.
 * Nor does an endpoint receive a type no longer in its `subscribedTypes` (a retry of one dispatched before the PATCH).
 */
const mayReceive = (endpoint: WebhookEndpointDoc, delivery: Pick<WebhookDeliveryDoc, 'eventType' | 'occurredAt'>): boolean => {
  if (delivery.eventType === 'webhook.test') return endpoint.status === 'ACTIVE' || endpoint.status === 'DISABLED';
  const receivesFrom = Math.max(endpoint.disabledAt?.getTime() ?? -Infinity, endpoint.enabledAt?.getTime() ?? -Infinity);
  return endpoint.status === 'ACTIVE' && endpoint.subscribedTypes.includes(delivery.eventType) && delivery.occurredAt.getTime() > receivesFrom;
};

const RESULT_LABEL = { DELIVERED: 'delivered', PENDING: 'retry', FAILED: 'failed', EXHAUSTED: 'exhausted', CANCELLED: 'failed' } as const;

const statusFor = (result: AttemptResult, next: Date | null): DeliveryStatus => {
  if (result.verdict === 'SUCCESS') return 'DELIVERED';
  if (result.verdict === 'PERMANENT') return 'FAILED';
  return next === null ? 'EXHAUSTED' : 'PENDING';
};

/**
 * The process is stopping (runtime.ts stopSignal): the attempt is not made, or not recorded when it was
 * cut short, and it is put back on the schedule for the next worker, this one restarted or another, which
 * sends it again under the same event id (docs/reference/contract.md §6.3 rule 1).
 */
async function abandon(deps: AppDeps, deliveryId: string): Promise<AttemptOutcome> {
  await scheduleAttempts(deps, [{ deliveryId, at: deps.now() }]);
  return { kind: 'ABANDONED' };
}

export async function attemptDelivery(deps: AppDeps, deliveryId: string): Promise<AttemptOutcome> {
  const { deliveries, endpoints } = webhookCollections(deps.store.db);
  if (stopSignal(deps).aborted) return abandon(deps, deliveryId);
  // Step 0.
  const found = await deliveries.findOne({ _id: deliveryId, status: 'PENDING' }, { projection: { endpointId: 1, organizationId: 1 } });
  if (!found) return { kind: 'NOT_DUE' };
  const { endpointId, organizationId } = found;
  // An endpoint that is gone is cancelled in step 2; its slot counts against no host.
  const endpoint = await endpoints.findOne({ _id: endpointId }, { projection: { url: 1 } });
  const key: SlotKey = { endpointId, organizationId, host: endpoint ? hostOf(endpoint.url) : '' };
  const slots = attemptSlots(deps);
  const full = slots.take(key);
  if (full) return { kind: 'DEFERRED', endpointId, organizationId, scope: full };
  try {
    return await attemptHolding(deps, deliveryId);
  } finally {
    if (slots.give(key)) {
      await resumeWaiting(deps).catch((err) => {
        deps.log.warn('could not resume deferred webhook deliveries; the sweep will', { endpointId, err: String(err) });
      });
    }
  }
}

/**
 * Puts the oldest due deliveries of the endpoints that had attempts turned away back on the job
 * schedule, oldest waiting endpoint first, each as many as it has room for under all three caps in this
 * process (counting those just scheduled for the endpoints before it). Called when an attempt gives its
 * slot back. A delivery scheduled twice is harmless: the second job finds it leased or done (NOT_DUE),
 * or is deferred again.
 */
async function resumeWaiting(deps: AppDeps): Promise<void> {
  const slots = attemptSlots(deps);
  const reserved = new Reservations();
  for (const key of slots.waiting()) {
    // No room (taken again meanwhile, or its organisation or host still full): it stays waiting, and
    // the end of an attempt that holds that room resumes it.
    const room = slots.room(key, reserved);
    if (room <= 0) continue;
    slots.clearWaiting(key.endpointId);
    const now = deps.now();
    const due = await webhookCollections(deps.store.db)
      .deliveries.find({ endpointId: key.endpointId, status: 'PENDING', nextAttemptAt: { $lte: now }, leaseUntil: { $lte: now } }, { projection: { _id: 1 } })
      .sort({ nextAttemptAt: 1, _id: 1 })
      .limit(room)
      .toArray();
    if (due.length === room) slots.markWaiting(key);
    reserved.add(key, due.length);
    await scheduleAttempts(deps, due.map((d) => ({ deliveryId: d._id, at: now })));
  }
}

/** Steps 1 to 5, holding one of the endpoint's slots. */
async function attemptHolding(deps: AppDeps, deliveryId: string): Promise<AttemptOutcome> {
  const { deliveries, endpoints } = webhookCollections(deps.store.db);
  const runtime = webhookRuntime(deps);

  // Step 1.
  const claimedAt = deps.now();
  const token = newRandomId();
  const claimed = (await deliveries.findOneAndUpdate(
    { _id: deliveryId, status: 'PENDING', nextAttemptAt: { $lte: claimedAt }, leaseUntil: { $lte: claimedAt } },
    { $set: { leaseUntil: new Date(claimedAt.getTime() + deps.config.webhookAttemptLeaseMs), leaseToken: token } },
    { returnDocument: 'after' },
  )) as WebhookDeliveryDoc | null;
  if (!claimed) return { kind: 'NOT_DUE' };
  const held = { _id: claimed._id, leaseToken: token, status: 'PENDING' as const };

  // Step 2.
  const endpoint = await endpoints.findOne({ _id: claimed.endpointId });
  if (!endpoint || !endpoint.secrets || !mayReceive(endpoint, claimed)) {
    await deliveries.updateOne(held, { $set: { status: 'CANCELLED', nextAttemptAt: null, leaseUntil: NO_LEASE, leaseToken: null } });
    return { kind: 'CANCELLED' };
  }

  // Step 3.
  const startedAt = deps.now();
  const attempt = claimed.attemptCount + 1;
  let secrets: string[] = [];
  const key = encryptionKeyOrNull(deps);
  if (key) {
    try {
      secrets = signingSecrets(endpoint, key, startedAt);
    } catch (err) {
      deps.log.error('cannot decrypt a webhook signing secret (was WEBHOOK_ENCRYPTION_KEY changed?)', { endpointId: endpoint._id, err: String(err) });
    }
  }

  // Step 4.
  let result: AttemptResult;
  if (secrets.length === 0) {
    result = { verdict: 'RETRY', statusCode: null, durationMs: 0, errorClass: SIGNING_UNAVAILABLE, responseSnippet: null, errorDetail: 'no usable signing key' };
  } else {
    const body = Buffer.from(claimed.body, 'utf8');
    const timestamp = Math.floor(startedAt.getTime() / 1000);
    result = await runtime.send({
      url: new URL(endpoint.url),
      body,
      headers: deliveryHeaders({ eventId: claimed.eventId, timestamp, attempt, secrets, body }),
      allowLocal: deps.config.webhookUnsafeAllowLocal,
      lookup: runtime.lookup,
      timeoutMs: runtime.timeoutMs,
      stopping: stopSignal(deps),
    });
  }
  if (result.errorClass === ABANDONED) {
    // The lease is given back: the next worker need not wait for it to run out.
    await deliveries.updateOne(held, { $set: { leaseUntil: NO_LEASE, leaseToken: null } });
    return abandon(deps, deliveryId);
  }

  // Step 5. Our own inability to sign is no attempt at the destination: it keeps its seven.
  const unsigned = result.errorClass === SIGNING_UNAVAILABLE;
  let next = unsigned ? signingRetryAt(startedAt, runtime.random) : result.verdict === 'RETRY' ? nextAttemptAt(attempt, startedAt, runtime.random) : null;
  const finishedAt = deps.now();
  const attemptCount = unsigned ? claimed.attemptCount : attempt;
  const status = await runCommand(deps.store, (session) =>
    recordAttemptIn(deps, session, { held, endpointId: endpoint._id, delivery: claimed, attemptCount, startedAt, finishedAt, result, status: statusFor(result, next), next }),
  );
  if (status !== 'PENDING') next = null;
  if (status === null) {
    deps.log.warn('webhook attempt finished after its lease was taken over; result not recorded', { deliveryId, attempt });
    return { kind: 'LOST_LEASE' };
  }
  webhookAttempted(RESULT_LABEL[status], attempt, (claimedAt.getTime() - (claimed.nextAttemptAt ?? claimedAt).getTime()) / 1000);
  if (result.verdict !== 'SUCCESS') {
    deps.log.info('webhook attempt failed', { deliveryId, endpointId: endpoint._id, attempt, status, statusCode: result.statusCode, errorClass: result.errorClass, detail: result.errorDetail });
  }
  if (status === 'PENDING' && next) await scheduleAttempts(deps, [{ deliveryId, at: next }]);
  return { kind: 'ATTEMPTED', attempt, status, result, nextAttemptAt: next };
}

interface AttemptRecord {
  held: { _id: string; leaseToken: string; status: 'PENDING' };
  endpointId: string;
  /** Whether the endpoint may still receive it (mayReceive) depends on these. */
  delivery: Pick<WebhookDeliveryDoc, 'eventType' | 'occurredAt'>;
  /** Attempts made at the destination, this one included (not one the service could not sign). */
  attemptCount: number;
  startedAt: Date;
  finishedAt: Date;
  result: AttemptResult;
  status: DeliveryStatus;
  next: Date | null;
}

/** Records the attempt; the delivery's status as recorded, or null when the lease was lost meanwhile. */
async function recordAttemptIn(deps: AppDeps, session: StoreSession, r: AttemptRecord): Promise<DeliveryStatus | null> {
  const { deliveries, endpoints } = webhookCollections(deps.store.db);
  const last = {
    lastStatusCode: r.result.statusCode,
    lastDurationMs: r.result.durationMs,
    lastErrorClass: r.result.errorClass,
    lastResponseSnippet: r.result.responseSnippet,
  };
  // Disabling cancels the endpoint's pending deliveries but leaves one with an attempt in flight to that
  // attempt: a retry it would schedule is cancelled here if the endpoint was disabled since (re-enabled
  // or not) or revoked, so that re-enabling does not replay old traffic.
  let status = r.status;
  if (status === 'PENDING') {
    const endpoint = await endpoints.findOne({ _id: r.endpointId }, { session });
    if (!endpoint || !mayReceive(endpoint, r.delivery)) status = 'CANCELLED';
  }
  const updated = await deliveries.updateOne(
    r.held,
    {
      $set: {
        status,
        attemptCount: r.attemptCount,
        lastAttemptAt: r.startedAt,
        nextAttemptAt: status === 'PENDING' ? r.next : null,
        deliveredAt: status === 'DELIVERED' ? r.finishedAt : null,
        ...last,
        leaseUntil: NO_LEASE,
        leaseToken: null,
      },
    },
    { session },
  );
  if (updated.matchedCount === 0) return null;
  // Our own inability to sign says nothing about the receiver: the endpoint's counters stay.
  if (r.result.errorClass === SIGNING_UNAVAILABLE) return status;
  if (r.result.verdict === 'SUCCESS') {
    await endpoints.updateOne({ _id: r.endpointId }, { $set: { consecutiveFailures: 0, lastSuccessAt: r.finishedAt, ...last } }, { session });
  } else {
    await endpoints.updateOne({ _id: r.endpointId }, { $inc: { consecutiveFailures: 1 }, $set: { lastFailureAt: r.finishedAt, ...last } }, { session });
  }
  return status;
}

/**
 * Closes the pending deliveries of an endpoint that was just disabled (test deliveries excepted, see
 * mayReceive) or revoked. Runs after that change committed, a bounded batch per write (docs/internals/design.md §2: an
 * endpoint with a long backlog can always be disabled). Idempotent; and if it stops half-way, each
 * delivery left is cancelled by its own attempt, which re-reads the endpoint (step 2). One with an
 * attempt in flight is left to that attempt. `createdUpTo` (the disable's time): a batch that runs
 * after the endpoint was enabled again must not cancel what was dispatched since.
 */
export async function cancelPendingDeliveriesOf(
  deps: AppDeps,
  endpointId: string,
  { keepTests, createdUpTo }: { keepTests: boolean; createdUpTo?: Date },
  batch = 500,
): Promise<number> {
  const { deliveries } = webhookCollections(deps.store.db);
  let cancelled = 0;
  for (;;) {
    const now = deps.now();
    const filter = {
      endpointId,
      status: 'PENDING' as const,
      leaseUntil: { $lte: now },
      ...(keepTests ? { eventType: { $ne: 'webhook.test' as const } } : {}),
      ...(createdUpTo ? { createdAt: { $lte: createdUpTo } } : {}),
    };
    const ids = (await deliveries.find(filter, { projection: { _id: 1 } }).limit(batch).toArray()).map((d) => d._id);
    if (ids.length === 0) return cancelled;
    const result = await deliveries.updateMany({ ...filter, _id: { $in: ids } }, { $set: { status: 'CANCELLED', nextAttemptAt: null } });
    cancelled += result.modifiedCount;
    if (ids.length < batch) return cancelled;
  }
}

/**
 * The safety net behind the per-attempt jobs: every PENDING delivery that is due and not held,
 * oldest due first, a few at a time. Returns how many attempts were made (or cancelled).
 */
export async function attemptDueDeliveries(deps: AppDeps, { batch = 100, concurrency = 4, maxRounds = 10 } = {}): Promise<number> {
  const { deliveries } = webhookCollections(deps.store.db);
  let handled = 0;
  // What is at its cap in this process (attempt-slots.ts) is left out: its deliveries would only be
  // deferred, and read again every round, ahead of everyone else's. A host at its cap is left out
  // endpoint by endpoint (a delivery does not record its host), as its endpoints are met.
  const deferredEndpoints = new Set<string>();
  const deferredOrganizations = new Set<string>();
  const stopping = stopSignal(deps);
  for (let round = 0; round < maxRounds && !stopping.aborted; round++) {
    const now = deps.now();
    const full = attemptSlots(deps).saturated();
    const skipEndpoints = [...new Set([...deferredEndpoints, ...full.endpointIds])];
    const skipOrganizations = [...new Set([...deferredOrganizations, ...full.organizationIds])];
    const due = await deliveries
      .find({
        status: 'PENDING',
        nextAttemptAt: { $lte: now },
        leaseUntil: { $lte: now },
        ...(skipEndpoints.length > 0 ? { endpointId: { $nin: skipEndpoints } } : {}),
        ...(skipOrganizations.length > 0 ? { organizationId: { $nin: skipOrganizations } } : {}),
      })
      .sort({ nextAttemptAt: 1, _id: 1 })
      .limit(batch)
      .toArray();
    let index = 0;
    const worker = async () => {
      // Once the process stops, what is left stays due for the next sweep.
      while (index < due.length && !stopping.aborted) {
        const delivery = due[index++];
        try {
          const outcome = await attemptDelivery(deps, delivery._id);
          if (outcome.kind === 'DEFERRED' && outcome.scope === 'organization') deferredOrganizations.add(outcome.organizationId);
          else if (outcome.kind === 'DEFERRED') deferredEndpoints.add(outcome.endpointId);
          else if (outcome.kind !== 'NOT_DUE') handled++;
        } catch (err) {
          // The lease runs out and a later sweep tries again.
          deps.log.error('webhook attempt crashed', { deliveryId: delivery._id, err: String(err) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, due.length) }, worker));
    if (due.length < batch) break;
  }
  return handled;
}
