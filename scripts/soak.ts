// npm run soak: submits SOAK_PURCHASES (default 100,000) purchases across SOAK_ORGANIZATIONS (default
// 100) organisations of 10 agents each to a service on a fresh file-backed DATA_DIR, and prints the
// service's resident memory at the start and the end, to show that memory does not grow with the
// number of documents stored or of organisations and agents served (and its peak, sampled every
// second), and the largest size of the WAL file, which the checkpointer must keep restarting. Then it
// stops the service and starts it again on the same data, and prints how long it took to be ready and
// to answer a decision. The service runs as `npm start` runs it (scripts/start-command.ts).
// SOAK_DATA_DIR keeps the data.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { portForChild } from './child-port.ts';
import { startCommand } from './start-command.ts';

const TOTAL = Number(process.env.SOAK_PURCHASES || 100_000);
const ORGANIZATIONS = Number(process.env.SOAK_ORGANIZATIONS || 100);
const AGENTS_PER_ORGANIZATION = 10;
const TOKEN = 'soak-admin-token-0123456789abcdef';

/** Resident memory of a process in MB (Linux /proc). */
function rssMb(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return line ? Math.round(Number(line[1]) / 1024) : NaN;
}

function manifest(n: number) {
  const agents = Array.from({ length: AGENTS_PER_ORGANIZATION }, (_, i) => ({ handle: `agent-${i}`, name: `Agent ${i}` }));
  return {
    organization: { handle: `soak-${n}`, name: `Soak Corp ${n}`, currency: 'EUR', timezone: 'Europe/Berlin' },
    agents,
    policies: [
      {
        handle: 'office',
        name: 'Office',
        scope: 'ORGANIZATION',
        currencies: ['EUR'],
        rules: [
          { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '500000' },
          { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '900000000000' },
        ],
        merchants: [{ listType: 'BLOCK', label: 'Shady Goods Ltd' }],
      },
    ],
    apiKeys: agents.map((a) => ({ handle: `${a.handle}-key`, agent: a.handle })),
  };
}

const tempDir = process.env.SOAK_DATA_DIR ? null : mkdtempSync(join(tmpdir(), 'spend-control-soak-'));
const dataDir = process.env.SOAK_DATA_DIR || join(tempDir!, 'data');
const port = await portForChild();
const start = startCommand();
const serve = () => spawn(process.execPath, [...start.flags, 'src/main.ts'], { env: { ...start.env, ...process.env, PORT: String(port), ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'warn', DATA_DIR: dataDir }, stdio: ['ignore', 'ignore', 'inherit'] });
const base = `http://127.0.0.1:${port}`;
async function untilReady(path: string) {
  for (let i = 0; !(await fetch(`${base}${path}`).then((r) => r.ok, () => false)); i++) {
    if (i > 6000) throw new Error('service did not start');
    await new Promise((r) => setTimeout(r, 10));
  }
}
let svc = serve();
await untilReady('/health');
const keys: string[] = [];
for (let n = 0; n < ORGANIZATIONS; n++) {
  const applied = (await fetch(`${base}/admin/manifests`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(manifest(n)) }).then((r) => r.json())) as { apiKeys: Record<string, { key: string }> };
  keys.push(...Object.values(applied.apiKeys).map(({ key }) => key));
}
const body = JSON.stringify({ merchant: 'Paper Supplies GmbH', amountMinor: '4599', reason: 'Printer paper', currency: 'EUR', category: 'office', metadata: { ticket: 'OPS-1234' } });
const requests = keys.map((key) => ({ method: 'POST' as const, path: '/v1/purchase-requests', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body }));

const startRss = rssMb(svc.pid!);
let peakRss = startRss;
// The WAL too: the checkpointer must restart it under steady writes, or it grows without end.
const walMb = () => Math.round((statSync(join(dataDir, 'spend-control.db-wal'), { throwIfNoEntry: false })?.size ?? 0) / 1048576);
let peakWal = walMb();
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, rssMb(svc.pid!));
  peakWal = Math.max(peakWal, walMb());
}, 1000);
const started = Date.now();
const result = await autocannon({ url: base, connections: 32, amount: TOTAL, requests, pipelining: 1, timeout: 60 });
const seconds = (Date.now() - started) / 1000;
const endRss = rssMb(svc.pid!);
clearInterval(sampler);
svc.kill('SIGTERM');
await once(svc, 'exit');

// A restart on the data just written: how long until ready, and until a decision is answered.
const restarted = Date.now();
svc = serve();
await untilReady('/health/ready');
const readyMs = Date.now() - restarted;
const first = await fetch(`${base}/v1/purchase-requests`, { method: 'POST', headers: requests[0].headers, body });
const firstDecisionMs = Date.now() - restarted;
if (first.status !== 201) throw new Error(`first decision after the restart: ${first.status} ${await first.text()}`);
svc.kill('SIGTERM');
await once(svc, 'exit');
if (tempDir) rmSync(tempDir, { recursive: true, force: true });
process.stdout.write(
  JSON.stringify({
    purchases: TOTAL,
    organizations: ORGANIZATIONS,
    agents: keys.length,
    created: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    seconds: Math.round(seconds),
    perSecond: Math.round(result['2xx'] / seconds),
    rssMbAtStart: startRss,
    rssMbAtEnd: endRss,
    rssMbPeak: Math.max(peakRss, endRss),
    walMbPeak: peakWal,
    restartReadyMs: readyMs,
    restartFirstDecisionMs: firstDecisionMs,
  }) + '\n',
);
