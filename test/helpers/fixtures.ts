// A realistic organisation, applied through the operator API like a person would.
import type { TestApp } from './app.ts';

export function acmeManifest(handle = 'acme') {
  return {
    organization: { handle, name: 'Acme Robotics', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT24H', status: 'ACTIVE' },
    people: [{ handle: 'ana', name: 'Ana Admin', email: `ana@${handle}.example` }],
    agents: [
      { handle: 'buyer', name: 'Office buyer', description: 'Buys office supplies', status: 'ENABLED' },
      { handle: 'travel', name: 'Travel booker', description: null, status: 'ENABLED' },
    ],
    policies: [
      {
        handle: 'office',
        name: 'Office supplies',
        description: null,
        status: 'ACTIVE',
        scope: 'ORGANIZATION',
        currencies: ['EUR'],
        activate: true,
        rules: [
          { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '50000' },
          { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '20000' },
          { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '200000', currency: 'EUR' },
        ],
        merchants: [{ listType: 'BLOCK', label: 'Shady Goods Ltd' }],
      },
      {
        handle: 'travel-usd',
        name: 'Travel in dollars',
        description: 'Only the travel agent, only USD',
        status: 'ACTIVE',
        scope: 'AGENT',
        agents: ['travel'],
        currencies: ['USD'],
        activate: true,
        rules: [{ ruleType: 'SPEND_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'MONTH', amountMinor: '1000000' }],
        merchants: [],
      },
    ],
    apiKeys: [{ handle: 'buyer-key', agent: 'buyer' }, { handle: 'travel-key', agent: 'travel' }, { handle: 'admin-key' }],
  };
}

/** acmeManifest with one organisation-wide policy, handle `budget`, holding `rules`, in the given zone and currencies. */
export function onePolicyManifest(handle: string, options: { timezone: string; currency: string; currencies?: string[]; rules: object[] }) {
  const base = acmeManifest(handle);
  return {
    ...base,
    organization: { ...base.organization, timezone: options.timezone, currency: options.currency },
    policies: [
      { handle: 'budget', name: 'Budget', description: null, status: 'ACTIVE', scope: 'ORGANIZATION', currencies: options.currencies ?? [options.currency], activate: true, rules: options.rules, merchants: [] },
    ],
  };
}

export interface AppliedOrg {
  organizationId: string;
  agents: Record<string, { id: string }>;
  policies: Record<string, { id: string; activeVersionId: string | null; draftVersionId: string | null }>;
  keys: Record<string, string>;
  keyIds: Record<string, string>;
  result: any;
}

/**
 * Applies a manifest, as a test's set-up. A 503 (the store busy: on a loaded machine, manifests applied
 * at once by tests running side by side lose races on the same documents past the command's budget) is
 * retried after its Retry-After, as the contract tells clients to, a few times: set-up is not what
 * those tests test. A 503 from a commit whose outcome was unknown may have applied it, and the retry
 * then shows no key: such a test fails for want of its key, never silently.
 */
export async function applyManifest(app: Pick<TestApp, 'admin'>, manifest: object = acmeManifest()): Promise<AppliedOrg> {
  let res = await app.admin('/admin/manifests', { body: manifest });
  for (let retries = 0; res.status === 503 && retries < 3; retries++) {
    await new Promise((resolve) => setTimeout(resolve, 1000 * Number(res.headers.get('retry-after') ?? 1)));
    res = await app.admin('/admin/manifests', { body: manifest });
  }
  if (res.status !== 200) throw new Error(`manifest refused: ${res.status} ${res.text}`);
  const keys: Record<string, string> = {};
  const keyIds: Record<string, string> = {};
  for (const [handle, k] of Object.entries(res.body.apiKeys as Record<string, { id: string; key?: string }>)) {
    if (k.key) keys[handle] = k.key;
    keyIds[handle] = k.id;
  }
  return { organizationId: res.body.organization.id, agents: res.body.agents, policies: res.body.policies, keys, keyIds, result: res.body };
}
