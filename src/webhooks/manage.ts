// Endpoint management (docs/reference/contract.md §3.4, §4.11-4.18): commands, each one transaction, and the queries
// behind the reads. Every lookup is scoped to the caller's organisation: another organisation's
// endpoint is the same 404 as an unknown one.
import type { AppDeps } from '../app-deps.ts';
import { bumpConfigStamp } from '../cache/config-cache.ts';
import { runCommand } from '../commands/run-command.ts';
import { eventsCollection, type EventDoc } from '../events/documents.ts';
import { ApiError, VersionConflict, conflict, notFound } from '../http/errors.ts';
import { newId } from '../ids.ts';
import type { StoreSession } from '../store/store.ts';
import type { CreateWebhookBody, UpdateWebhookBody } from '../../schemas/webhooks.ts';
import { WEBHOOK_API_VERSION } from '../../schemas/webhooks.ts';
import { cancelPendingDeliveriesOf } from './deliver.ts';
import { DELIVERIES_LIMIT } from '../../schemas/webhook-resources.ts';
import { checkWebhookDestination } from './destination.ts';
import { newDelivery } from './dispatch.ts';
import { webhookCollections, type EndpointSecrets, type WebhookDeliveryDoc, type WebhookEndpointDoc } from './documents.ts';
import { presentDelivery, presentEndpoint, presentIssuedEndpoint } from './present.ts';
import { scheduleAttempts } from './queue.ts';
import { destinationOptions, requireEncryptionKey, webhookRuntime } from './runtime.ts';
import { encryptSecret, generateWebhookSecret } from './secrets.ts';
import { fenceSubscriptions } from './subscriptions.ts';

/** docs/reference/contract.md §8 / §4.17: the old secret keeps signing this long after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export { DELIVERIES_LIMIT };

const revoked = () => conflict('webhook_endpoint_revoked', 'This webhook endpoint is revoked; revocation is terminal.');

/** docs/reference/contract.md §6.6 at creation and on PATCH: syntax, then every resolved address. */
async function permittedUrl(deps: AppDeps, raw: string): Promise<string> {
  // Bounded by the attempt timeout, like the check before each attempt.
  const checked = await checkWebhookDestination(raw, { ...destinationOptions(deps), timeoutMs: webhookRuntime(deps).timeoutMs });
  if (!checked.ok) throw new ApiError(400, 'webhook_url_not_permitted', `The webhook URL is not permitted: ${checked.reason}.`);
  return checked.url.href;
}

async function loadIn(deps: AppDeps, session: StoreSession | undefined, organizationId: string, id: string): Promise<WebhookEndpointDoc> {
  const endpoint = await webhookCollections(deps.store.db).endpoints.findOne({ _id: id, organizationId }, session ? { session } : {});
  if (!endpoint) throw notFound('webhook endpoint');
  return endpoint;
}

async function writeVersioned(deps: AppDeps, session: StoreSession, endpoint: WebhookEndpointDoc, update: Record<string, unknown>, unset?: Record<string, ''>) {
  const result = await webhookCollections(deps.store.db).endpoints.updateOne(
    { _id: endpoint._id, version: endpoint.version },
    { $set: { ...update, version: endpoint.version + 1 }, ...(unset ? { $unset: unset } : {}) },
    { session },
  );
  if (result.matchedCount === 0) throw new VersionConflict(`webhook endpoint ${endpoint._id}`);
  await bumpConfigStamp(deps.store.db, session); // who receives which events is cached (subscriptions.ts)
}

export async function listEndpoints(deps: AppDeps, organizationId: string) {
  // All of them, revoked ones included (contract §4.11: unpaginated); the secrets never leave the store for a read.
  const items = await webhookCollections(deps.store.db).endpoints.find({ organizationId }, { projection: { secrets: 0 } }).sort({ createdAt: 1, _id: 1 }).toArray();
  return { items: items.map(presentEndpoint) };
}

export async function getEndpoint(deps: AppDeps, organizationId: string, id: string) {
  return presentEndpoint(await loadIn(deps, undefined, organizationId, id));
}

/** An endpoint as its creation writes it: ACTIVE, never attempted. */
export function newEndpoint(
  id: string,
  organizationId: string,
  fields: { url: string; description: string | null; subscribedTypes: readonly string[] },
  secrets: EndpointSecrets,
  now: Date,
): WebhookEndpointDoc {
  return {
    _id: id,
    organizationId,
    url: fields.url,
    description: fields.description,
    status: 'ACTIVE',
    subscribedTypes: [...fields.subscribedTypes],
    apiVersion: WEBHOOK_API_VERSION,
    consecutiveFailures: 0,
    createdAt: now,
    updatedAt: now,
    disabledAt: null,
    revokedAt: null,
    lastFailureAt: null,
    lastSuccessAt: null,
    lastStatusCode: null,
    lastDurationMs: null,
    lastErrorClass: null,
    lastResponseSnippet: null,
    secrets,
    version: 1,
  };
}

export async function createEndpoint(deps: AppDeps, organizationId: string, body: CreateWebhookBody) {
  const key = requireEncryptionKey(deps);
  const url = await permittedUrl(deps, body.url);
  const { endpoints, quotas } = webhookCollections(deps.store.db);
  const id = newId();
  const secret = generateWebhookSecret();
  const secrets: EndpointSecrets = { current: encryptSecret(key, secret, id), previous: null, previousExpiresAt: null };
  const doc = await runCommand(deps.store, async (session) => {
    const now = deps.now();
    // Each creation adds to GET /v1/webhooks for good once revoked (the contract lists revoked ones): a day's
    // creations are counted, UTC days, so a create-and-delete loop cannot grow it without bound. The count
    // of a former day (or from before days were counted) starts again at 0.
    const day = now.toISOString().slice(0, 10);
    await quotas.updateOne({ _id: organizationId, creationsDay: { $ne: day } }, { $set: { creations: 0 } }, { session });
    // Also the organisation's webhook fence: an event recorded for nobody meanwhile is retried and sees this endpoint.
    const { creations = 0 } = (await quotas.findOneAndUpdate({ _id: organizationId }, { $inc: { creations: 1 }, $set: { creationsDay: day } }, { session, upsert: true, returnDocument: 'after' })) ?? {};
    if (creations > deps.config.webhookCreationsPerDay) {
      throw conflict('webhook_limit_reached', `This account has created ${deps.config.webhookCreationsPerDay} webhook endpoints today (UTC); create more tomorrow, or PATCH an existing endpoint's url.`);
    }
    const inUse = await endpoints.countDocuments({ organizationId, status: { $ne: 'REVOKED' } }, { session });
    if (inUse >= deps.config.webhookEndpointLimit) {
      throw conflict('webhook_limit_reached', `This account already has ${deps.config.webhookEndpointLimit} webhook endpoints that are not revoked.`);
    }
    const endpoint = newEndpoint(id, organizationId, { url, description: body.description ?? null, subscribedTypes: body.subscribedTypes }, secrets, now);
    await endpoints.insertOne(endpoint, { session });
    await bumpConfigStamp(deps.store.db, session); // who receives which events is cached (subscriptions.ts)
    return endpoint;
  });
  return presentIssuedEndpoint(doc, secret);
}

export async function updateEndpoint(deps: AppDeps, organizationId: string, id: string, body: UpdateWebhookBody) {
  // Refuse a revoked endpoint before spending a DNS lookup on its new URL.
  const before = await loadIn(deps, undefined, organizationId, id);
  if (before.status === 'REVOKED') throw revoked();
  const url = body.url === undefined ? undefined : await permittedUrl(deps, body.url);
  const doc = await runCommand(deps.store, async (session) => {
    const endpoint = await loadIn(deps, session, organizationId, id);
    if (endpoint.status === 'REVOKED') throw revoked();
    const now = deps.now();
    const set: Partial<WebhookEndpointDoc> = { updatedAt: now };
    if (url !== undefined) set.url = url;
    if (body.description !== undefined) set.description = body.description;
    if (body.subscribedTypes !== undefined) set.subscribedTypes = [...body.subscribedTypes];
    if (body.apiVersion !== undefined) set.apiVersion = body.apiVersion;
    if (body.status !== undefined && body.status !== endpoint.status) {
      set.status = body.status;
      // docs/reference/contract.md §3.4 sets disabledAt on ACTIVE -> DISABLED and nothing on re-enabling: it keeps saying
      // when the endpoint was last disabled. Pending deliveries are cancelled after the commit (bounded batches).
      if (body.status === 'DISABLED') set.disabledAt = now;
      else set.enabledAt = now;
    }
    await writeVersioned(deps, session, endpoint, set);
    // It may add a receiver (enabled again, a type added): an event recorded for nobody meanwhile is retried and sees it.
    await fenceSubscriptions(deps.store.db, session, organizationId);
    return { ...endpoint, ...set, version: endpoint.version + 1 };
  });
  // Only what was pending when it was disabled: if it is enabled again before the last batch, what
  // came since is not this cancellation's.
  if (doc.status === 'DISABLED') await cancelPendingDeliveriesOf(deps, doc._id, { keepTests: true, createdUpTo: doc.disabledAt! });
  return presentEndpoint(doc);
}

/** DELETE (docs/reference/contract.md §3.4, §4.15): terminal; secrets destroyed; record and history kept. */
export async function revokeEndpoint(deps: AppDeps, organizationId: string, id: string) {
  const doc = await runCommand(deps.store, async (session) => {
    const endpoint = await loadIn(deps, session, organizationId, id);
    if (endpoint.status === 'REVOKED') throw revoked();
    const now = deps.now();
    const set = { status: 'REVOKED' as const, revokedAt: now, updatedAt: now };
    await writeVersioned(deps, session, endpoint, set, { secrets: '' });
    const next: WebhookEndpointDoc = { ...endpoint, ...set, version: endpoint.version + 1 };
    delete next.secrets;
    return next;
  });
  await cancelPendingDeliveriesOf(deps, doc._id, { keepTests: false });
  return presentEndpoint(doc);
}

/**
 * docs/reference/contract.md §4.17: a new current secret; the old current one keeps signing for 24 hours beside it
 * unless `retireImmediately`. A secret older than that (from an earlier rotation) is dropped.
 */
export async function rotateSecret(deps: AppDeps, organizationId: string, id: string, retireImmediately: boolean) {
  const before = await loadIn(deps, undefined, organizationId, id);
  if (before.status === 'REVOKED') throw revoked();
  const key = requireEncryptionKey(deps);
  const secret = generateWebhookSecret();
  const current = encryptSecret(key, secret, id);
  const doc = await runCommand(deps.store, async (session) => {
    const endpoint = await loadIn(deps, session, organizationId, id);
    if (endpoint.status === 'REVOKED' || !endpoint.secrets) throw revoked();
    const now = deps.now();
    const secrets: EndpointSecrets = retireImmediately
      ? { current, previous: null, previousExpiresAt: null }
      : { current, previous: endpoint.secrets.current, previousExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS) };
    const set = { secrets, updatedAt: now };
    await writeVersioned(deps, session, endpoint, set);
    return { ...endpoint, ...set, version: endpoint.version + 1 };
  });
  return presentIssuedEndpoint(doc, secret);
}

/**
 * docs/reference/contract.md §4.18: a real `webhook.test` event, recorded in the outbox already dispatched (it goes to
 * this endpoint only, whatever its subscriptions), and its delivery, in one transaction; the first
 * attempt is then scheduled like any other.
 */
export async function queueTestEvent(deps: AppDeps, organizationId: string, id: string) {
  const before = await loadIn(deps, undefined, organizationId, id);
  if (before.status === 'REVOKED') throw revoked();
  requireEncryptionKey(deps);
  const delivery = await runCommand(deps.store, async (session) => {
    const endpoint = await loadIn(deps, session, organizationId, id);
    if (endpoint.status === 'REVOKED') throw revoked();
    const now = deps.now();
    const event: EventDoc = {
      _id: newId(),
      type: 'webhook.test',
      organizationId,
      createdAt: now,
      data: {
        webhookId: endpoint._id,
        message: 'This is a test event sent by POST /v1/webhooks/{webhookId}/test.',
      },
      dispatchedAt: now,
    };
    await eventsCollection(deps.store.db).insertOne(event, { session });
    const created = newDelivery(event, endpoint, now);
    await webhookCollections(deps.store.db).deliveries.insertOne(created, { session });
    return created;
  });
  await scheduleAttempts(deps, [{ deliveryId: delivery._id, at: delivery.createdAt }]);
  return { deliveryId: delivery._id, eventId: delivery.eventId, status: 'queued' as const };
}

/** docs/reference/contract.md §4.16: newest first, `limit` of them, and whether there are more. */
export async function listDeliveries(deps: AppDeps, organizationId: string, id: string, limit: number) {
  const endpoint = await loadIn(deps, undefined, organizationId, id);
  const rows: WebhookDeliveryDoc[] = await webhookCollections(deps.store.db)
    .deliveries.find({ endpointId: endpoint._id })
    .sort({ _id: -1 })
    .limit(limit + 1)
    .toArray();
  return { items: rows.slice(0, limit).map(presentDelivery), hasMore: rows.length > limit };
}
