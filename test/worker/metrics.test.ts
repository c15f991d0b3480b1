// What the jobs count (expiries, delivery attempts, their lag) is counted where they run: in the web
// process that runs them (RUN_JOBS, npm start's default on the embedded store), beside its requests, or
// in the worker process, which serves it on METRICS_PORT (src/worker/metrics-listener.ts).
import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { acmeManifest } from '../helpers/fixtures.ts';
import { startService, tempDataDir, type ServiceProcess } from '../helpers/service-process.ts';

const METRICS_TOKEN = 'metrics-token-for-the-jobs-metrics-test';

async function scrape(svc: { url: string }): Promise<string> {
  const res = await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return res.text();
}

/** The value of one sample line, `name{labels} value`, or null when the scrape has none. */
function sample(text: string, line: RegExp): number | null {
  const match = new RegExp(`^${line.source} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : null;
}

/**
 * The families of a scrape, checked against the text exposition format: each declared once by a
 * `# TYPE` line, its samples after it (a histogram's as _bucket, _sum and _count), labels quoted.
 */
function families(t: ExecutionContext, text: string): Set<string> {
  const declared = new Set<string>();
  let family: { name: string; type: string } | null = null;
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ')) continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      t.false(declared.has(type[1]), `${type[1]} is declared once`);
      declared.add(type[1]);
      family = { name: type[1], type: type[2] };
      continue;
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*\})? (\S+)$/.exec(line);
    if (!sample || !family) {
      t.fail(`not a sample of a declared family: ${line}`);
      continue;
    }
    const suffixes = family.type === 'histogram' ? ['_bucket', '_sum', '_count'] : family.type === 'summary' ? ['', '_sum', '_count'] : [''];
    t.true(suffixes.some((suffix) => sample[1] === family!.name + suffix), `${sample[1]} belongs to ${family.name}`);
    t.false(Number.isNaN(Number(sample[3].replace(/^\+?Inf$/, 'Infinity'))), `${line}: a number`);
  }
  return declared;
}

/** A purchase held for a person for 2 s, whom nobody answers. */
async function heldPurchase(t: ExecutionContext, svc: ServiceProcess, handle: string) {
  const manifest = acmeManifest(handle);
  manifest.organization.approvalTtl = 'PT2S';
  const applied = await svc.admin('/admin/manifests', manifest);
  t.is(applied.status, 200);
  const key: string = applied.body.apiKeys['buyer-key'].key;
  const held = await svc.request('/v1/purchase-requests', { key, body: { merchant: 'Paper Co', amountMinor: '30000', reason: 'needs a person, who never comes' } });
  t.is(held.body.decision.outcome, 'REQUIRES_APPROVAL');
  return { key, id: held.body.purchaseRequest.id as string };
}

/** Scrapes until the expiry shows (at most 30 s), and returns the last scrape. */
async function scrapeUntilExpired(t: ExecutionContext, target: { url: string }): Promise<string> {
  let text = await scrape(target);
  t.is(sample(text, /spend_approvals_expired_total/), 0, 'nothing expired yet');
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline && !sample(text, /spend_approvals_expired_total/)) {
    await sleep(250);
    text = await scrape(target);
  }
  return text;
}

test('an approval expired by the web process\'s own jobs is counted on its /metrics, beside the decisions the requests made', async (t) => {
  const svc = await startService(t, tempDataDir(t), { METRICS_TOKEN, JOBS_PROCESS_EVERY: '1 second' });
  t.teardown(() => svc.stop('SIGTERM'));
  const held = await heldPurchase(t, svc, 'metrics');
  const text = await scrapeUntilExpired(t, svc);
  t.is(sample(text, /spend_approvals_expired_total/), 1, 'the expiry its jobs ran');
  t.is(sample(text, /spend_decisions_total\{outcome="REJECTED",kind="APPROVAL_EXPIRED"\}/), 1, 'its decision');
  t.is(sample(text, /spend_decisions_total\{outcome="REQUIRES_APPROVAL",kind="INITIAL"\}/), 1, 'the request\'s decision, in the same family');
  t.is(sample(text, /spend_job_lag_seconds_count\{job="approvals.expire"\}/), 1);
  t.is((text.match(/^# TYPE spend_decisions_total counter$/gm) ?? []).length, 1, 'one family');
  t.is((text.match(/^spend_process_cpu_user_seconds_total /gm) ?? []).length, 1, 'the process\'s own metrics once');
  // The process's own families, the start time among them (Prometheus reads restarts from it).
  const served = families(t, text);
  for (const own of ['spend_process_start_time_seconds', 'spend_nodejs_version_info', 'spend_process_resident_memory_bytes', 'spend_approvals_pending']) {
    t.true(served.has(own), `${own} is served`);
  }
  t.true((sample(text, /spend_process_start_time_seconds/) ?? 0) > 0);
  t.is((await svc.request(`/v1/purchase-requests/${held.id}`, { key: held.key })).body.purchase.status, 'EXPIRED');
});

test('the worker process serves the jobs\' metrics on METRICS_PORT, to the bearer of METRICS_TOKEN only', async (t) => {
  const dataDir = tempDataDir(t);
  const web = await startService(t, dataDir, { RUN_JOBS: '0' });
  t.teardown(() => web.stop('SIGTERM'));
  const worker = spawn(process.execPath, ['src/worker/main.ts'], {
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'info', METRICS_TOKEN, METRICS_PORT: '0', JOBS_PROCESS_EVERY: '1 second' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  worker.stdout.on('data', (d) => (output += d));
  worker.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
  t.teardown(() => void worker.kill('SIGKILL'));
  let port: number | undefined;
  for (const deadline = Date.now() + 60_000; port === undefined && Date.now() < deadline && worker.exitCode === null; await sleep(100)) {
    port = Number(/"msg":"metrics listening","port":(\d+)/.exec(output)?.[1]) || undefined;
  }
  if (port === undefined) throw new Error(`the worker did not serve its metrics:\n${output}`);
  const url = `http://127.0.0.1:${port}`;

  t.is((await fetch(`${url}/metrics`)).status, 401);
  t.is((await fetch(`${url}/metrics`, { headers: { authorization: 'Bearer not-the-metrics-token' } })).headers.get('www-authenticate'), 'Bearer realm="metrics"');
  t.is((await fetch(`${url}/health`)).status, 404, 'nothing else is served');
  t.is((await fetch(`${url}/metrics`, { method: 'POST' })).status, 405);

  const held = await heldPurchase(t, web, 'worker-metrics');
  const text = await scrapeUntilExpired(t, { url });
  t.is(sample(text, /spend_approvals_expired_total/), 1, 'the expiry the worker ran, on the worker\'s /metrics');
  t.is(sample(text, /spend_decisions_total\{outcome="REJECTED",kind="APPROVAL_EXPIRED"\}/), 1);
  t.is(sample(text, /spend_decisions_total\{outcome="REQUIRES_APPROVAL",kind="INITIAL"\}/), null, 'the web process\'s decision is the web process\'s to serve');
  t.is((await web.request(`/v1/purchase-requests/${held.id}`, { key: held.key })).body.purchase.status, 'EXPIRED');
  worker.kill('SIGTERM');
  t.is(await exited, 0, 'a clean stop, the listener closed');
});

test('a METRICS_PORT another process holds stops the worker before it takes any job, and says which setting', async (t) => {
  const dataDir = tempDataDir(t);
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, resolve));
  t.teardown(() => void holder.close());
  const taken = (holder.address() as AddressInfo).port;
  const worker = spawn(process.execPath, ['src/worker/main.ts'], {
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'info', METRICS_TOKEN, METRICS_PORT: String(taken) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  worker.stdout.on('data', (d) => (output += d));
  worker.stderr.on('data', (d) => (output += d));
  t.teardown(() => void worker.kill('SIGKILL'));
  const code = await new Promise<number | null>((resolve) => worker.once('exit', (c) => resolve(c)));
  t.not(code, 0);
  t.regex(output, new RegExp(`METRICS_PORT ${taken}`));
  // A worker that had started would have locked due jobs, left to their lock's expiry by the crash.
  t.notRegex(output, /jobs started/);
});
