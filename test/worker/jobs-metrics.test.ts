// The jobs run on a thread of the web process (src/worker/jobs-thread.ts), and what they count is counted
// there: GET /metrics on the web thread must show it, added to what the request thread counted.
import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { acmeManifest } from '../helpers/fixtures.ts';
import { startService, tempDataDir, type ServiceProcess } from '../helpers/service-process.ts';

const METRICS_TOKEN = 'metrics-token-for-the-jobs-thread-test';

async function scrape(svc: ServiceProcess): Promise<string> {
  const res = await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return res.text();
}

/** The value of one sample line, `name{labels} value`, or null when the scrape has none. */
function sample(text: string, line: RegExp): number | null {
  const match = new RegExp(`^${line.source} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : null;
}

test('an approval expired by the jobs thread is counted on the web thread\'s /metrics, beside the decisions the requests made', async (t) => {
  const svc = await startService(t, tempDataDir(t), { METRICS_TOKEN, JOBS_PROCESS_EVERY: '1 second' });
  t.teardown(() => svc.stop('SIGTERM'));
  const manifest = acmeManifest('metrics');
  manifest.organization.approvalTtl = 'PT2S';
  const applied = await svc.admin('/admin/manifests', manifest);
  t.is(applied.status, 200);
  const key: string = applied.body.apiKeys['buyer-key'].key;
  const held = await svc.request('/v1/purchase-requests', { key, body: { merchant: 'Paper Co', amountMinor: '30000', reason: 'needs a person, who never comes' } });
  t.is(held.body.decision.outcome, 'REQUIRES_APPROVAL');

  let text = await scrape(svc);
  t.is(sample(text, /spend_approvals_expired_total/), 0, 'nothing expired yet');
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !sample(text, /spend_approvals_expired_total/)) {
    await sleep(250);
    text = await scrape(svc);
  }
  t.is(sample(text, /spend_approvals_expired_total/), 1, 'the expiry the jobs thread ran');
  t.is(sample(text, /spend_decisions_total\{outcome="REJECTED",kind="APPROVAL_EXPIRED"\}/), 1, 'its decision, counted on the thread');
  t.is(sample(text, /spend_decisions_total\{outcome="REQUIRES_APPROVAL",kind="INITIAL"\}/), 1, 'the request thread\'s decision, in the same family');
  t.is(sample(text, /spend_job_lag_seconds_count\{job="approvals.expire"\}/), 1);
  t.is((text.match(/^# TYPE spend_decisions_total counter$/gm) ?? []).length, 1, 'one family, not one per thread');
  t.is((text.match(/^spend_process_cpu_user_seconds_total /gm) ?? []).length, 1, 'the process\'s own metrics once');
  t.is((await svc.request(`/v1/purchase-requests/${held.body.purchaseRequest.id}`, { key })).body.purchase.status, 'EXPIRED');
});
