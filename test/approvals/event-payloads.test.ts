// Every event the service records has the `data` shape published in schemas/events.ts and the OpenAPI
// document's webhook bodies, no undocumented field either.
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { startApp } from '../helpers/app.ts';
import { applyManifest } from '../helpers/fixtures.ts';
import { shopManifest, purchase } from '../helpers/shop.ts';
import { inOnePeriod, tracked } from '../helpers/windows.ts';
import { checkEventData } from '../helpers/contract.ts';

test('purchase, approval, budget and agent events match their schemas', async (t) => {
  const app = await startApp({ jobs: { sweepEvery: '1 second' } });
  // The budget events need one day's budget used up: a run across midnight in Berlin runs once more, in the new day.
  try {
    await inOnePeriod(t, app.store.db, 'DAY', async (t, track, attempt) => {
      const manifest: any = shopManifest(`events-${attempt}`);
      manifest.organization.approvalTtl = 'PT4S';
      const org = await applyManifest(app, manifest);
      const buy = (amount: number, merchant = 'Paper Co') => tracked(track, app.request('/v1/purchase-requests', { key: org.keys['a-key'], body: purchase(amount, merchant) }));
      await buy(100); // approved
      await buy(100, 'Shady Goods Ltd'); // rejected
      const pending = (await buy(25000)).body.purchaseRequest.id; // approval required; expires in 4 s
      const answered = (await buy(21000)).body.purchaseRequest.id;
      await app.admin(`/admin/purchase-requests/${answered}/answer`, { body: { answer: 'REJECT', person: 'ana' } });
      for (let i = 0; i < 150 && !(await app.store.db.collection('events').findOne({ type: 'purchase.approval_expired', 'data.purchaseRequestId': pending })); i++) await sleep(100);
      for (let i = 0; i < 5; i++) await buy(18000); // 100 + 90000 spent: past 80% of the daily 100000
      await buy(9900); // exactly 100%: exhausted
      await buy(5000); // refused by the exhausted budget: reported once already
      await app.admin(`/admin/agents/${org.agents.b.id}`, { method: 'PATCH', body: { status: 'DISABLED' } });
      await app.admin(`/admin/agents/${org.agents.b.id}`, { method: 'PATCH', body: { status: 'ARCHIVED' } });

      const events = await app.store.db.collection('events').find({ organizationId: org.organizationId }).toArray();
      const types = new Set(events.map((e: any) => e.type));
      for (const type of ['purchase.approved', 'purchase.rejected', 'purchase.approval_required', 'purchase.approval_expired', 'budget.threshold_reached', 'budget.exhausted', 'agent.disabled', 'agent.archived']) {
        t.true(types.has(type), `${type} was recorded`);
      }
      for (const event of events as any[]) {
        t.notThrows(() => checkEventData(event.type, JSON.parse(JSON.stringify(event.data))), event.type);
      }
    });
  } finally {
    await app.close();
  }
});
