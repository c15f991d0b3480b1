// npm run bench: decisions per second and latency of POST /v1/purchase-requests with a realistic
// organisation (20 agents, 10 policies with amount limits, daily and monthly budgets and merchant
// lists), side by side with two baselines at 32 and 128 connections:
//   bare   a Koa route that parses the same JSON body and returns it;
//   floor  a Koa route that parses the same body and returns a canned response of the same size as a
//          real decision: the least any Koa service answering this request could cost.
// Then the engine micro-benchmark (p50/p99 of one evaluation on the realistic input) and the store
// round trips per decision through the official driver (scripts/bench-round-trips.ts: against
// MONGODB_URI, or else the embedded store's wire-protocol listener).
// The service and the baselines run in child processes; autocannon drives them from this one.
// At 32 connections it measures a second service with SQLITE_SYNCHRONOUS=FULL (unless the environment
// chose the mode, the store or one connection count). BENCH_SECONDS (default 10) sets each run's duration. Beside requests per second (which depend on
// whatever else the machine runs) it prints the CPU time the serving process spent per request, from
// /proc, and the ratio of the floor's to the decision's: the load-independent form of the same ratio. The service's environment is this one's, so
// `MONGODB_URI=... WEB_CONCURRENCY=2 npm run bench` measures that configuration. Each connection count
// runs in rounds (three at 32, five at 128; BENCH_ROUNDS sets the number), each with its own floor run,
// and prints the median ratio and every round's p99. BENCH_ONLY=32 runs one connection count only, one
// round unless BENCH_ROUNDS says more (for profiling and side-by-side runs). After the 32-connection round the same service runs it once
// more with a draft in shadow (BENCH_SHADOW=0 skips it): decisions per second, p99 and CPU per decision
// beside the round without, and how far behind the shadow was when it ended (purchases pending, the age
// of the oldest, and how long it took to catch up). The service runs with the V8 flags and environment of
// `npm start` (scripts/start-command.ts; BENCH_V8_FLAGS overrides the flags).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { benchEngine } from './bench-engine.ts';
import { benchReceipts } from './bench-receipts.ts';
import { BENCH_BODY, BENCH_TOKEN, benchManifest } from './bench-manifest.ts';
import { countRoundTrips } from './bench-round-trips.ts';
import { portForChild } from './child-port.ts';
import { startCommand } from './start-command.ts';

const SECONDS = Number(process.env.BENCH_SECONDS || 10);


async function startChild(args: string[], env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let buffered = '';
  for await (const chunk of child.stdout!) {
    buffered += chunk;
    const m = /listening (\d+)/.exec(buffered);
    if (m) {
      child.stdout!.resume();
      return { child, url: `http://127.0.0.1:${m[1]}` };
    }
  }
  throw new Error(`child exited before listening: ${buffered}`);
}

interface Round {
  decisions: RunResult & { cpuUsPerRequest: number | null };
  floorRoute: RunResult & { cpuUsPerRequest: number | null };
  bareRoute?: RunResult & { cpuUsPerRequest: number | null };
  ratioToFloor: number;
  ratioToBare?: number;
  cpuRatioToFloor: number | null;
}

interface RunResult {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

async function run(url: string, connections: number, requests: autocannon.Request[]): Promise<RunResult> {
  // Each connection starts at its own place in the list: autocannon starts every connection at the
  // first request, so they moved through the agents together, all on one agent's mailbox at a time.
  let started = 0;
  const setupClient = (client: autocannon.Client) => {
    const at = started++ % requests.length;
    client.setRequests([...requests.slice(at), ...requests.slice(0, at)]);
  };
  const result = await autocannon({ url, connections, duration: SECONDS, requests, pipelining: 1, setupClient });
  return {
    perSecond: Math.round(result['2xx'] / SECONDS),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

const ratio = (a: number, b: number) => Math.round((a / b) * 1000) / 1000;

const TICKS_PER_SECOND = 100; // USER_HZ on Linux
/** CPU time (user + system) a process and its descendants have used so far, in microseconds; null where /proc is not there. */
async function cpuUs(pid: number | undefined): Promise<number | null> {
  if (pid === undefined) return null;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    let total = ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
    // Under WEB_CONCURRENCY the requests are served by the cluster's workers: count them too.
    const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
    for (const child of children.split(' ').filter(Boolean)) total += (await cpuUs(Number(child))) ?? 0;
    return total;
  } catch {
    return null;
  }
}

/**
 * The write system calls a process and its descendants have made so far, and the bytes they wrote (all
 * threads: the SQLite checkpointer's too), from /proc/<pid>/io; null where it is not there. Unlike time,
 * they do not depend on the machine's load: a WAL frame is two calls (its header, then its page).
 */
async function writesSoFar(pid: number | undefined): Promise<{ calls: number; bytes: number } | null> {
  if (pid === undefined) return null;
  try {
    const io = await readFile(`/proc/${pid}/io`, 'utf8');
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1]);
    const total = { calls: field('syscw'), bytes: field('wchar') };
    const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
    for (const child of children.split(' ').filter(Boolean)) {
      const more = await writesSoFar(Number(child));
      if (more) (total.calls += more.calls), (total.bytes += more.bytes);
    }
    return Number.isFinite(total.calls) && Number.isFinite(total.bytes) ? total : null;
  } catch {
    return null;
  }
}

/**
 * A run, with the CPU time the serving process spent per request: unlike requests per second, that
 * does not depend on what else the machine is doing (the 2-core machine is often shared).
 */
async function measured(pid: number | undefined, url: string, connections: number, requests: autocannon.Request[]) {
  const [before, writesBefore] = [await cpuUs(pid), await writesSoFar(pid)];
  const result = await run(url, connections, requests);
  const [after, writesAfter] = [await cpuUs(pid), await writesSoFar(pid)];
  const served = result.perSecond * SECONDS;
  const per = (a: number, b: number) => Math.round(((a - b) / served) * 10) / 10;
  return {
    ...result,
    cpuUsPerRequest: before === null || after === null || served === 0 ? null : Math.round((after - before) / served),
    writesPerRequest: writesBefore === null || writesAfter === null || served === 0 ? null : { calls: per(writesAfter.calls, writesBefore.calls), kb: per(writesAfter.bytes / 1024, writesBefore.bytes / 1024) },
  };
}

/**
 * The service in a child process, as `npm start` runs it, on a fresh temporary DATA_DIR (the durable
 * default, file-backed; BENCH_DATA_DIR=:memory: measures without the disk), with the bench
 * organisation applied and one decision made (its body is the floor's).
 */
async function startService(env: Record<string, string> = {}) {
  const port = await portForChild();
  // BENCH_PROFILE=<dir>: the service writes a V8 CPU profile there when it stops (scripts/profile-summary.ts reads it).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const dataRoot = process.env.BENCH_DATA_DIR ? null : await mkdtemp(join(tmpdir(), 'spend-control-bench-'));
  const dataDir = process.env.BENCH_DATA_DIR || join(dataRoot!, 'data');
  const start = startCommand();
  const svc = spawn(process.execPath, [...profile, ...start.flags, 'src/main.ts'], { env: { ...start.env, ...process.env, PORT: String(port), ADMIN_TOKEN: BENCH_TOKEN, LOG_LEVEL: 'warn', DATA_DIR: dataDir, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; !(await fetch(`${base}/health`).then((r) => r.ok, () => false)); i++) {
    if (i > 300 || svc.exitCode !== null) throw new Error('service did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  const applied = (await fetch(`${base}/admin/manifests`, { method: 'POST', headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(benchManifest()) }).then((r) => r.json())) as { apiKeys: Record<string, { key: string }> };
  const keys = Object.values(applied.apiKeys).map((k) => k.key);
  const decisionRequests = keys.map((key) => ({ method: 'POST' as const, path: '/v1/purchase-requests', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BENCH_BODY }));
  const sample = await fetch(`${base}/v1/purchase-requests`, { method: 'POST', headers: decisionRequests[0].headers, body: BENCH_BODY });
  const sampleText = await sample.text();
  if (sample.status !== 201) throw new Error(`sample decision failed: ${sample.status} ${sampleText}`);
  return { svc, base, decisionRequests, sampleText, cleanUp: async () => void (dataRoot && (await rm(dataRoot, { recursive: true, force: true }))) };
}

/**
 * A draft of the bench's first policy (a lower approval threshold) put in shadow, then the measured
 * 32-connection round, then the shadow's lag as its report gives it, and how long it took to catch up.
 */
async function shadowRound(base: string, decisionRequests: autocannon.Request[], pid: number | undefined) {
  const admin = { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json' };
  const manifest = benchManifest();
  const policy = manifest.policies[0];
  const stricter = { ...policy, activate: false, rules: policy.rules.map((r) => (r.effect === 'REQUIRE_APPROVAL' ? { ...r, amountMinor: '4000' } : r)) };
  const applied = (await fetch(`${base}/admin/manifests`, { method: 'POST', headers: admin, body: JSON.stringify({ ...manifest, apiKeys: [...manifest.apiKeys, { handle: 'bench-org-key' }], policies: [stricter, ...manifest.policies.slice(1)] }) }).then((r) => r.json())) as {
    policies: Record<string, { id: string; draftVersionId: string | null }>;
    apiKeys: Record<string, { key?: string }>;
  };
  const orgKey = applied.apiKeys['bench-org-key']?.key;
  if (!orgKey) throw new Error('the bench organisation key was not created');
  const { id: policyId, draftVersionId } = applied.policies[policy.handle];
  if (!draftVersionId) throw new Error('the bench draft was not created');
  const report = async () => {
    const res = await fetch(`${base}/v1/policies/${policyId}/versions/${draftVersionId}/shadow`, { headers: { authorization: `Bearer ${orgKey}` } });
    if (!res.ok) throw new Error(`shadow report: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { shadow: { pending: number; pendingSince: string | null }; summary: { evaluated: number } });
  };
  // The shadow's start: its first evaluations read the recorded spend of every budget window they open (once
  // per window and lifetime; more the busier the period so far) and the holds pending then. One purchase
  // of each agent opens them all (agent-scoped policies have windows of their own). Timed apart, with the
  // CPU it took, and not in the round: the round measures the live decisions beside a running shadow.
  const cpuAtStart = await cpuUs(pid);
  const startedAt = Date.now();
  const started = await fetch(`${base}/admin/policy-versions/${draftVersionId}`, { method: 'PATCH', headers: admin, body: JSON.stringify({ shadow: true }) });
  if (!started.ok) throw new Error(`could not start the shadow: ${started.status} ${await started.text()}`);
  for (const r of decisionRequests) {
    const first = await fetch(`${base}${r.path}`, { method: 'POST', headers: r.headers as Record<string, string>, body: r.body as string });
    if (first.status !== 201) throw new Error(`first decisions in shadow: ${first.status} ${await first.text()}`);
  }
  while ((await report()).summary.evaluated < decisionRequests.length) await new Promise((r) => setTimeout(r, 20));
  const cpuAfterStart = await cpuUs(pid);
  const start = { ms: Date.now() - startedAt, cpuMs: cpuAtStart === null || cpuAfterStart === null ? null : Math.round((cpuAfterStart - cpuAtStart) / 1000) };
  // Warm-up (not measured), as the decisions' own: the JIT compiles the shadow's evaluation first.
  await autocannon({ url: base, connections: 8, duration: 3, requests: decisionRequests });
  // The CPU of the round counts the shadow's evaluation of every purchase of it: up to its catching up.
  const before = await cpuUs(pid);
  const result = await run(base, 32, decisionRequests);
  const ended = Date.now();
  const atEnd = await report();
  let last = atEnd;
  while (last.shadow.pending > 0) {
    await new Promise((r) => setTimeout(r, 100));
    last = await report();
  }
  const after = await cpuUs(pid);
  const served = result.perSecond * SECONDS;
  const decisions = { ...result, cpuUsPerRequest: before === null || after === null || served === 0 ? null : Math.round((after - before) / served) };
  return {
    start,
    decisions,
    lag: { pending: atEnd.shadow.pending, seconds: atEnd.shadow.pendingSince === null ? null : Math.round((ended - Date.parse(atEnd.shadow.pendingSince)) / 100) / 10, caughtUpMs: Date.now() - ended },
    evaluated: last.summary.evaluated,
  };
}

async function main() {
  const service = await startService();
  const { svc, base, decisionRequests } = service;
  // The floor answers with a real decision's body, so both sides write the same bytes.
  const sampleText = service.sampleText;
  const dir = await mkdtemp(join(tmpdir(), 'bench-'));
  const floorFile = join(dir, 'decision.json');
  await writeFile(floorFile, sampleText);

  const bare = await startChild(['scripts/bench-bare.ts'], { PORT: '0' });
  const floor = await startChild(['scripts/bench-bare.ts'], { PORT: '0', BENCH_FLOOR_FILE: floorFile });
  const baselineRequests = [{ method: 'POST' as const, path: '/bench', headers: { 'content-type': 'application/json' }, body: BENCH_BODY }];

  // Warm-up (not measured): the JIT compiles the hot paths of all three before the first measured run.
  await Promise.all([
    autocannon({ url: base, connections: 8, duration: 3, requests: decisionRequests }),
    autocannon({ url: floor.url, connections: 8, duration: 3, requests: baselineRequests }),
    autocannon({ url: bare.url, connections: 8, duration: 3, requests: baselineRequests }),
  ]);

  const out: Record<string, unknown> = {
    seconds: SECONDS,
    store: process.env.MONGODB_URI ? 'mongodb' : 'embedded',
    webConcurrency: Number(process.env.WEB_CONCURRENCY || 1),
    decisionBytes: Buffer.byteLength(sampleText),
    loadAverageBefore: Math.round(loadavg()[0] * 10) / 10,
  };
  // Rounds, as the performance target is stated (docs/internals/performance.md): the median of three at
  // 32 connections, and every one of five at 128 (a tail shows in any round). Each round measures the
  // floor right after the decisions, so the ratio compares runs under the same load of the machine.
  const only = process.env.BENCH_ONLY ? Number(process.env.BENCH_ONLY) : null;
  for (const connections of only !== null ? [only] : [32, 128]) {
    const rounds = Number(process.env.BENCH_ROUNDS || (only !== null ? 1 : connections === 32 ? 3 : 5));
    const results: Round[] = [];
    for (let i = 0; i < rounds; i++) {
      const decisions = await measured(svc.pid, base, connections, decisionRequests);
      const floorRoute = await measured(floor.child.pid, floor.url, connections, baselineRequests);
      // The bare route once per connection count: a second reference, not the target's.
      const bareRoute = i === 0 ? await measured(bare.child.pid, bare.url, connections, baselineRequests) : null;
      const cpuRatioToFloor = decisions.cpuUsPerRequest && floorRoute.cpuUsPerRequest ? ratio(floorRoute.cpuUsPerRequest, decisions.cpuUsPerRequest) : null;
      const round: Round = { decisions, floorRoute, ratioToFloor: ratio(decisions.perSecond, floorRoute.perSecond), cpuRatioToFloor };
      if (bareRoute) Object.assign(round, { bareRoute, ratioToBare: ratio(decisions.perSecond, bareRoute.perSecond) });
      results.push(round);
      process.stderr.write(
        `${connections} connections${rounds > 1 ? `, round ${i + 1} of ${rounds}` : ''}: ${decisions.perSecond} decisions/s (p50 ${decisions.p50Ms} ms, p99 ${decisions.p99Ms} ms, non-2xx ${decisions.non2xx}, ${decisions.cpuUsPerRequest ?? '?'} us CPU each${decisions.writesPerRequest ? `, ${decisions.writesPerRequest.calls} write calls and ${decisions.writesPerRequest.kb} KB written each` : ''}); ` +
          `floor ${floorRoute.perSecond}/s (ratio ${round.ratioToFloor}; ${floorRoute.cpuUsPerRequest ?? '?'} us CPU each, CPU ratio ${cpuRatioToFloor ?? '?'})` +
          (bareRoute ? `, bare ${bareRoute.perSecond}/s (ratio ${ratio(decisions.perSecond, bareRoute.perSecond)})` : '') +
          '\n',
      );
    }
    // The round of the median ratio stands for the connection count (the shadow's round compares with it).
    const byRatio = [...results].sort((a, b) => a.ratioToFloor - b.ratioToFloor);
    const median = byRatio[(byRatio.length - 1) >> 1];
    out[`c${connections}`] = { ...median, bareRoute: results[0].bareRoute, ratioToBare: results[0].ratioToBare };
    if (rounds > 1) {
      const p99s = results.map((r) => r.decisions.p99Ms);
      const cpuRatios = results.map((r) => r.cpuRatioToFloor).filter((r): r is number => r !== null).sort((a, b) => a - b);
      const medianCpuRatio = cpuRatios[(cpuRatios.length - 1) >> 1] ?? null;
      out[`c${connections}Rounds`] = { rounds: results, medianRatioToFloor: median.ratioToFloor, medianCpuRatioToFloor: medianCpuRatio, p99Ms: p99s, worstP99Ms: Math.max(...p99s) };
      process.stderr.write(
        `${connections} connections, ${rounds} rounds: median ratio to the floor ${median.ratioToFloor} (CPU ratio ${medianCpuRatio ?? '?'}); p99 by round ${p99s.join(', ')} ms\n`,
      );
    }
  }
  // The shadow's cost: the 32-connection round once more on the same service, with a draft of one policy in
  // shadow (every decision is then also evaluated against it, off the request path), beside the run
  // without; then how far behind the shadow was when the round ended (purchases it had yet to evaluate).
  if (process.env.BENCH_SHADOW !== '0' && out.c32) {
    const shadow = await shadowRound(base, decisionRequests, svc.pid);
    const without = (out.c32 as { decisions: RunResult & { cpuUsPerRequest: number | null } }).decisions;
    out.c32Shadow = shadow;
    process.stderr.write(
      `32 connections, a draft in shadow: ${shadow.decisions.perSecond} decisions/s (p50 ${shadow.decisions.p50Ms} ms, p99 ${shadow.decisions.p99Ms} ms, non-2xx ${shadow.decisions.non2xx}, ` +
        `${shadow.decisions.cpuUsPerRequest ?? '?'} us CPU each) beside ${without.perSecond}/s (p99 ${without.p99Ms} ms, ${without.cpuUsPerRequest ?? '?'} us CPU each) without; ` +
        `at the end the shadow had ${shadow.lag.pending} purchases to evaluate (oldest ${shadow.lag.seconds ?? 0} s old), caught up ${shadow.lag.caughtUpMs} ms later; ${shadow.evaluated} evaluated; ` +
        `CPU per decision ${without.cpuUsPerRequest && shadow.decisions.cpuUsPerRequest ? `${Math.round((shadow.decisions.cpuUsPerRequest / without.cpuUsPerRequest - 1) * 1000) / 10} %` : '?'} beside the round without; ` +
        `its start (one purchase per agent, evaluated) took ${shadow.start.ms} ms, ${shadow.start.cpuMs ?? '?'} ms CPU\n`,
    );
  }
  // The same at 32 connections with SQLITE_SYNCHRONOUS=FULL (an fsync per group commit: durable across a
  // power loss), on a service of its own, unless the environment chose the mode or the store.
  if (!process.env.MONGODB_URI && !process.env.SQLITE_SYNCHRONOUS && !process.env.BENCH_DATA_DIR && !process.env.BENCH_ONLY) {
    svc.kill('SIGTERM');
    await once(svc, 'exit');
    const full = await startService({ SQLITE_SYNCHRONOUS: 'FULL' });
    await autocannon({ url: full.base, connections: 8, duration: 3, requests: full.decisionRequests });
    const decisions = await measured(full.svc.pid, full.base, 32, full.decisionRequests);
    const floorRoute = (out.c32 as { floorRoute: { perSecond: number } }).floorRoute;
    out.c32Full = { decisions, ratioToFloor: ratio(decisions.perSecond, floorRoute.perSecond) };
    process.stderr.write(
      `32 connections, SQLITE_SYNCHRONOUS=FULL: ${decisions.perSecond} decisions/s (p50 ${decisions.p50Ms} ms, p99 ${decisions.p99Ms} ms, non-2xx ${decisions.non2xx}, ` +
        `${decisions.cpuUsPerRequest ?? '?'} us CPU each); ratio to the floor above ${ratio(decisions.perSecond, floorRoute.perSecond)}\n`,
    );
    full.svc.kill('SIGTERM');
    await once(full.svc, 'exit');
    await full.cleanUp();
  }
  svc.kill('SIGTERM');
  bare.child.kill('SIGTERM');
  floor.child.kill('SIGTERM');
  await Promise.all([svc.exitCode === null && svc.signalCode === null ? once(svc, 'exit') : null, once(bare.child, 'exit'), once(floor.child, 'exit')]);
  await rm(dir, { recursive: true, force: true });
  await service.cleanUp();

  out.loadAverageAfter = Math.round(loadavg()[0] * 10) / 10;
  // A server that serves one database (a service's own wire listener) refuses the scratch database.
  out.roundTrips = await countRoundTrips().catch((error: Error) => ({ error: error.message }));
  out.engine = benchEngine(20_000);
  // Each decision's receipt (docs/integrate/receipts.md): the signing's cost, and its share of the CPU
  // time a decision costs the service at 32 connections (what the decision costs without a receipt is
  // that time less this; the bound set for receipts is 10 %). The share is of the p50: on a busy
  // machine the mean of a 30 µs operation measures the preemptions of this process more than the signing.
  const receipts = benchReceipts(20_000);
  const cpuPerDecision = (out.c32 as { decisions?: { cpuUsPerRequest: number | null } } | undefined)?.decisions?.cpuUsPerRequest ?? null;
  out.receipts = { ...receipts, shareOfDecisionCpu: cpuPerDecision ? ratio(receipts.p50Us, cpuPerDecision) : null };
  process.stderr.write(
    `receipts: signing ${receipts.meanUs} us per decision (p50 ${receipts.p50Us}, p99 ${receipts.p99Us})` +
      (cpuPerDecision ? `; the p50 is ${Math.round((receipts.p50Us / cpuPerDecision) * 1000) / 10} % of the ${cpuPerDecision} us CPU a decision costs at 32 connections` : '') +
      '\n',
  );
  process.stdout.write(JSON.stringify(out) + '\n');
}

if (import.meta.main) await main();
