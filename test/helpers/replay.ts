// Shared by the replay and shadow tests (test/simulations/): an organisation with one policy, its version 1 and
// a stricter version 2, a deterministic stream of purchase requests, and a hash of everything stored.
import { createHash } from 'node:crypto';
import type { TestApp } from './app.ts';

export const V1_RULES = [
  { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '50000' },
  { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '20000' },
  { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '300000', currency: 'EUR' },
];
export const V2_RULES = [
  { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '50000' },
  { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '12000' },
  { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '180000', currency: 'EUR' },
];
export const V1_MERCHANTS = [{ listType: 'BLOCK', label: 'Shady Goods Ltd' }];
export const V2_MERCHANTS = [...V1_MERCHANTS, { listType: 'BLOCK', label: 'Cheap Stuff' }];

export function manifest(handle: string, policy: { rules: unknown[]; merchants: unknown[]; activate: boolean }[]) {
  return {
    organization: { handle, name: 'Replay Co', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT24H', status: 'ACTIVE' },
    people: [{ handle: 'ana', name: 'Ana Admin', email: `ana@${handle}.example` }],
    agents: [
      { handle: 'buyer', name: 'Office buyer', description: null, status: 'ENABLED' },
      { handle: 'travel', name: 'Travel booker', description: null, status: 'ENABLED' },
    ],
    policies: policy.map((p) => ({ handle: 'office', name: 'Office', description: null, status: 'ACTIVE', scope: 'ORGANIZATION', currencies: ['EUR'], ...p })),
    apiKeys: [{ handle: 'buyer-key', agent: 'buyer' }, { handle: 'travel-key', agent: 'travel' }, { handle: 'org-key' }],
  };
}

const MERCHANTS = ['Paper Co', 'Staples', 'Cheap Stuff', 'Shady Goods Ltd', 'Office Depot', 'Coffee Beans'];

/** The i-th request: a deterministic mix of merchants, amounts (some above each threshold) and agents. */
export function request(i: number) {
  const x = (i * 2654435761) % 4294967296;
  const amount = 500 + (x % 29) * 1000 + (i % 7 === 0 ? 25000 : 0);
  return { agent: i % 3 === 0 ? 'travel-key' : 'buyer-key', body: { merchant: MERCHANTS[x % MERCHANTS.length], amountMinor: String(amount), reason: `request ${i}` } };
}

/** Every collection, hashed document by document (a credential's lastUsedAt aside: authentication records it). */
export async function storeHash(app: TestApp): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of (await app.store.db.listCollectionNames()).sort()) {
    const docs = await app.store.db.collection(name).find({}).sort({ _id: 1 }).toArray();
    const h = createHash('sha256');
    for (const { lastUsedAt: _, ...doc } of docs) h.update(JSON.stringify(doc));
    out[name] = `${docs.length}:${h.digest('hex')}`;
  }
  return out;
}

/** Every change of a replay or shadow report, following nextCursor. */
export async function allChanges(first: { status: number; body: any }, next: (cursor: string) => Promise<{ status: number; body: any }>) {
  const changes = [...first.body.changes];
  let page = first;
  while (page.body.hasMore) {
    page = await next(page.body.nextCursor);
    if (page.status !== 200) throw new Error(`page: ${page.status}`);
    changes.push(...page.body.changes);
  }
  return changes;
}
