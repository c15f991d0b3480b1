// npm run bench: decisions per second and latency of POST /v1/purchase-requests on the embedded
// engine with a realistic organisation (20 agents, 10 policies with amount limits, daily and monthly
// budgets and merchant lists), against a bare Koa route that parses and returns the same JSON, at
// 32 and 128 connections. Prints one JSON line, then the engine micro-benchmark.
// The service and the baseline run in child processes; autocannon drives them from this one.
// BENCH_SECONDS (default 10) sets each run's duration. The service stores in a fresh temporary
// DATA_DIR (the durable default, file-backed); BENCH_DATA_DIR=:memory: measures without the disk.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { benchEngine } from './bench-engine.ts';

const SECONDS = Number(process.env.BENCH_SECONDS || 10);
const TOKEN = 'bench-admin-token-0123456789abcdef';

function manifest() {
  const agents = Array.from({ length: 20 }, (_, i) => ({ handle: `agent-${i}`, name: `Agent ${i}` }));
  const policies = Array.from({ length: 10 }, (_, p) => ({
    handle: `policy-${p}`,
    name: `Policy ${p}`,
    scope: p < 4 ? 'ORGANIZATION' : 'AGENT',
    agents: p < 4 ? undefined : agents.filter((_, i) => i % 6 === p % 6).map((a) => a.handle),
    currencies: ['EUR', 'USD'],
    rules: [
      { ruleType: 'AMOUNT_LIMIT', effect: 'BLOCK', periodKind: 'PER_REQUEST', amountMinor: '500000' },
      { ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '200000' },
      { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'DAY', amountMinor: '900000000000' },
      { ruleType: 'SPEND_LIMIT', effect: 'BLOCK', periodKind: 'MONTH', amountMinor: '9000000000000', currency: 'EUR' },
    ],
    merchants: Array.from({ length: 40 }, (_, m) => ({ listType: 'BLOCK', label: `Blocked merchant ${p}-${m}` })),
  }));
  return {
    organization: { handle: 'bench', name: 'Bench Corp', currency: 'EUR', timezone: 'Europe/Berlin' },
    agents,
    policies,
    apiKeys: agents.map((a) => ({ handle: `${a.handle}-key`, agent: a.handle })),
  };
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

async function startChild(args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let buffered = '';
  for await (const chunk of child.stdout!) {
    buffered += chunk;
    const m = /listening (\d+)/.exec(buffered);
    if (m) {
      child.stdout!.resume();
      return { child, port: Number(m[1]) };
    }
  }
  throw new Error(`child exited before listening: ${buffered}`);
}

async function run(url: string, connections: number, requests: autocannon.Request[]) {
  const result = await autocannon({ url, connections, duration: SECONDS, requests, pipelining: 1 });
  const ok = result['2xx'];
  return {
    requestsPerSecond: Math.round(ok / SECONDS),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

const body = JSON.stringify({ merchant: 'Paper Supplies GmbH', amountMinor: '4599', reason: 'Printer paper', currency: 'EUR', category: 'office', metadata: { ticket: 'OPS-1234' } });

const port = await freePort();
const tempDir = process.env.BENCH_DATA_DIR ? null : mkdtempSync(join(tmpdir(), 'spend-control-bench-'));
const dataDir = process.env.BENCH_DATA_DIR || join(tempDir!, 'data');
const svc = spawn(process.execPath, ['src/main.ts'], { env: { ...process.env, PORT: String(port), ADMIN_TOKEN: TOKEN, LOG_LEVEL: 'warn', DATA_DIR: dataDir }, stdio: ['ignore', 'ignore', 'inherit'] });
const base = `http://127.0.0.1:${port}`;
for (let i = 0; !(await fetch(`${base}/health`).then((r) => r.ok, () => false)); i++) {
  if (i > 300) throw new Error('service did not start');
  await new Promise((r) => setTimeout(r, 100));
}
const applied = (await fetch(`${base}/admin/manifests`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(manifest()) }).then((r) => r.json())) as { apiKeys: Record<string, { key: string }> };
const keys = Object.values(applied.apiKeys).map((k) => k.key);
const decisionRequests = keys.map((key) => ({ method: 'POST' as const, path: '/v1/purchase-requests', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body }));

const bare = await startChild(['scripts/bench-bare.ts'], { PORT: '0' });
const bareUrl = `http://127.0.0.1:${bare.port}`;
const bareRequests = [{ method: 'POST' as const, path: '/bench', headers: { 'content-type': 'application/json' }, body }];

const out: Record<string, unknown> = { seconds: SECONDS, store: 'embedded', dataDir: tempDir ? 'temporary directory' : dataDir, synchronous: process.env.SQLITE_SYNCHRONOUS || 'NORMAL' };
for (const connections of [32, 128]) {
  const decisions = await run(base, connections, decisionRequests);
  const baseline = await run(bareUrl, connections, bareRequests);
  out[`c${connections}`] = { decisions, bareRoute: baseline, ratioToBare: Math.round((decisions.requestsPerSecond / baseline.requestsPerSecond) * 1000) / 1000 };
}
svc.kill('SIGTERM');
bare.child.kill('SIGTERM');
await Promise.all([once(svc, 'exit'), once(bare.child, 'exit')]);
if (tempDir) rmSync(tempDir, { recursive: true, force: true });
process.stdout.write(JSON.stringify(out) + '\n');
const engine = benchEngine(20_000);
process.stdout.write(JSON.stringify({ engine }) + '\n');
