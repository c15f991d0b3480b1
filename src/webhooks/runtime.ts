// What the webhook capability takes from its surroundings beyond AppDeps: DNS, the HTTP sender and
// the jitter source. Production uses the defaults; tests (and embedders) replace them for one deps
// object with `configureWebhooks`, so nothing global changes between tests.
import type { AppDeps } from '../app-deps.ts';
import { ApiError } from '../http/errors.ts';
import type { LookupFn } from './destination.ts';
import { parseEncryptionKey } from './secrets.ts';
import { sendWebhook } from './send.ts';

export interface WebhookRuntime {
  /** DNS for destination checks at creation/PATCH and before each attempt; undefined = destination.ts dnsResolver() (c-ares, the system's nameservers). */
  lookup: LookupFn | undefined;
  send: typeof sendWebhook;
  /** Jitter source for the retry schedule, Math.random's contract. */
  random: () => number;
  /** Per-attempt request timeout (docs/reference/decisions.md: 10 s). */
  timeoutMs: number;
}

const DEFAULTS: WebhookRuntime = { lookup: undefined, send: sendWebhook, random: Math.random, timeoutMs: 10_000 };
const overrides = new WeakMap<AppDeps, Partial<WebhookRuntime>>();

export function configureWebhooks(deps: AppDeps, runtime: Partial<WebhookRuntime>): void {
  overrides.set(deps, { ...overrides.get(deps), ...runtime });
}

export function webhookRuntime(deps: AppDeps): WebhookRuntime {
  return { ...DEFAULTS, ...overrides.get(deps) };
}

export const destinationOptions = (deps: AppDeps) => ({
  allowLocal: deps.config.webhookUnsafeAllowLocal,
  lookup: webhookRuntime(deps).lookup,
});

const stops = new WeakMap<AppDeps, AbortController>();

/**
 * Aborted once this process stops (stopAttempts): no attempt starts after it, and one in flight is
 * abandoned, to be made again by the next worker (deliver.ts).
 */
export function stopSignal(deps: AppDeps): AbortSignal {
  let stop = stops.get(deps);
  if (stop === undefined) stops.set(deps, (stop = new AbortController()));
  return stop.signal;
}

/** The webhooks capability's `stopping`: called as the process stops, before the jobs in hand are drained. */
export function stopAttempts(deps: AppDeps): void {
  stopSignal(deps);
  stops.get(deps)!.abort(new Error('the process is stopping'));
}

const parsedKeys = new Map<string, Buffer | null>();

/**
 * The AES key for secrets at rest, or null when WEBHOOK_ENCRYPTION_KEY is unset or unusable (an
 * unusable value is logged once, without the value, and treated as unset).
 */
export function encryptionKeyOrNull(deps: AppDeps): Buffer | null {
  const raw = deps.config.webhookEncryptionKey;
  if (raw === null) return null;
  if (!parsedKeys.has(raw)) {
    try {
      parsedKeys.set(raw, parseEncryptionKey(raw));
    } catch (err) {
      deps.log.error('WEBHOOK_ENCRYPTION_KEY is unusable; webhooks are off', { err: (err as Error).message });
      parsedKeys.set(raw, null);
    }
  }
  return parsedKeys.get(raw) ?? null;
}

/** docs/reference/contract.md §4.12, §4.17, §4.18: without a key no secret can be stored or used. */
export function requireEncryptionKey(deps: AppDeps): Buffer {
  const key = encryptionKeyOrNull(deps);
  if (key === null) {
    throw new ApiError(503, 'webhook_not_configured', 'Webhooks are not configured on this service (WEBHOOK_ENCRYPTION_KEY is not set).');
  }
  return key;
}

const warned = new WeakSet<AppDeps>();

/** docs/reference/decisions.md: the development switch is loud. */
export function warnIfUnsafe(deps: AppDeps): void {
  if (!deps.config.webhookUnsafeAllowLocal || warned.has(deps)) return;
  warned.add(deps);
  deps.log.warn('WEBHOOK_UNSAFE_ALLOW_LOCAL=1: webhooks may be delivered to loopback addresses on any port; for development and tests only');
}
