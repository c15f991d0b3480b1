// The shadow's report pages its changes in request order (requestedAt, then purchase id) although they are
// stored a chunk per evaluation, in the order the decisions committed: where purchases committed in
// another order than they were requested (two processes), chunks overlap, and a page still lists the
// changes in order, each once (src/simulations/shadow.ts shadowChangesPage).
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { shadowChangesPage } from '../../src/simulations/shadow.ts';
import { pageQuery } from '../../src/simulations/replay-run.ts';
import { testStore } from '../helpers/store.ts';
import type { ShadowChangesDoc } from '../../src/policies/shadows.ts';

const change = (at: number, id: string) => ({
  purchaseRequestId: id,
  agentId: randomUUID(),
  merchant: 'Paper Co',
  amountMinor: '100',
  currency: 'EUR',
  requestedAt: new Date(Date.UTC(2026, 5, 1, 8, 0, at)).toISOString(),
  recorded: { outcome: 'APPROVED', reasonCodes: ['WITHIN_POLICY'] },
  replayed: { outcome: 'REQUIRES_APPROVAL', reasonCodes: ['APPROVAL_THRESHOLD_EXCEEDED'] },
});

test('overlapping chunks of changes are paged in request order, each change once', async (t) => {
  const store = await testStore();
  t.teardown(() => store.close());
  const versionId = randomUUID();
  const ids = Array.from({ length: 12 }, () => randomUUID()).sort();
  // Seconds 0..11; the chunks as three evaluations stored them: the second holds purchases requested
  // before some of the first's (committed later), and two changes share a second.
  const chunks = [
    [change(0, ids[0]), change(3, ids[3]), change(5, ids[5]), change(9, ids[9])],
    [change(1, ids[1]), change(2, ids[2]), change(6, ids[6]), change(6, ids[7])],
    [change(4, ids[4]), change(8, ids[8]), change(10, ids[10]), change(11, ids[11])],
  ];
  const key = (c: ReturnType<typeof change>) => `${c.requestedAt}|${c.purchaseRequestId}`;
  await store.db.collection<ShadowChangesDoc>('shadow_decisions').insertMany(
    chunks.map((changes, k) => ({ _id: `${versionId}:${k + 1}`, versionId, organizationId: randomUUID(), fromKey: key(changes[0]), toKey: key(changes[changes.length - 1]), changes: JSON.stringify(changes) })),
  );
  const expected = chunks.flat().sort((a, b) => (key(a) < key(b) ? -1 : 1)).map((c) => c.purchaseRequestId);
  for (const limit of [1, 2, 3, 5, 12, 50]) {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 20; pages++) {
      const page = await shadowChangesPage(store.db, versionId, pageQuery({ limit: String(limit), ...(cursor ? { cursor } : {}) }));
      t.true(page.changes.length <= limit);
      seen.push(...page.changes.map((c) => c.purchaseRequestId));
      if (!page.hasMore) {
        t.is(page.nextCursor, null);
        break;
      }
      cursor = page.nextCursor!;
    }
    t.deepEqual(seen, expected, `limit ${limit}`);
  }
});
