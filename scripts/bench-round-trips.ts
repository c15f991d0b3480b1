// Store round trips per decision through the official driver: `node scripts/bench-round-trips.ts`
// (also part of `npm run bench`). Against MONGODB_URI when set, otherwise against the embedded store's
// MongoDB wire-protocol listener started here (over a fresh in-memory store), so the figure exists on a
// machine without mongod. The service runs in this process on a scratch database with the driver's
// command monitoring on; every command started is one round trip. Those sent with `autocommit: false`
// (the commit included) are the ones inside the transaction; a retryable write outside one carries a
// transaction number too, so that is not the test.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { BENCH_BODY, BENCH_TOKEN, benchManifest } from './bench-manifest.ts';

export interface RoundTrips {
  server: string;
  /** Decisions of the bench's request (no Idempotency-Key). */
  plain: PerDecision;
  /** The same request with a fresh Idempotency-Key each time. */
  withIdempotencyKey: PerDecision;
  /**
   * The cost of one receipt chain per organisation (docs/integrate/receipts.md): concurrent decisions of
   * the bench organisation's agents all move its chain head, so on MongoDB all but one of those in
   * flight at once lose the race and run again.
   */
  contention: { decisions: number; concurrency: number; retriesPerDecision: number; roundTripsPerDecision: number };
}

export interface PerDecision {
  /** Every command a decision sent, inside its transaction or not. */
  perDecision: number;
  /** Commands sent with autocommit: false: the transaction's reads and writes and its commit. */
  inTransactionPerDecision: number;
  /** Per command name (`find`, `update`, `commitTransaction`, ...), per decision, inside the transaction. */
  inTransactionByCommand: Record<string, number>;
}

async function withServer<T>(fn: (uri: string, server: string) => Promise<T>): Promise<T> {
  if (process.env.MONGODB_URI) return fn(process.env.MONGODB_URI, 'MONGODB_URI');
  const { openStore } = await import('../src/store/open-store.ts');
  const { storePerDatabase } = await import('../src/store/wire/databases.ts');
  const { mongoUrl } = await import('../src/store/wire/embedded-listener.ts');
  const { WireListener } = await import('../src/store/wire/listener.ts');
  const { MemoryUsers, SERVICE_USER } = await import('../src/store/wire/users.ts');
  const users = new MemoryUsers();
  const password = users.set(SERVICE_USER);
  const databases = storePerDatabase((dbName) => openStore({ dbName, dataDir: ':memory:' }));
  const listener = await WireListener.start({ databases, users, port: 0 });
  try {
    return await fn(mongoUrl(listener.host, listener.port, SERVICE_USER, password, ''), 'the embedded wire-protocol listener');
  } finally {
    await listener.close();
    await databases.close();
  }
}

export function countRoundTrips(decisions = 50): Promise<RoundTrips> {
  return withServer(async (uri, server) => {
    const { openMongoStore } = await import('../src/store/mongo.ts');
    const { composeDeps, createIndexes } = await import('../src/compose.ts');
    const { serviceApp } = await import('../src/service-app.ts');
    const { loadConfig } = await import('../src/config.ts');
    const { silentLogger } = await import('../src/log.ts');
    const { noScheduler } = await import('../src/jobs/scheduler.ts');
    const store = await openMongoStore(uri, { dbName: `bench_${randomBytes(6).toString('hex')}`, clientOptions: { monitorCommands: true } });
    let total = 0;
    const inTransaction = new Map<string, number>();
    store.client.on('commandStarted', (event) => {
      total++;
      if ((event.command as { autocommit?: unknown }).autocommit === false) inTransaction.set(event.commandName, (inTransaction.get(event.commandName) ?? 0) + 1);
    });
    try {
      await createIndexes(store.db);
      const config = loadConfig({ ADMIN_TOKEN: BENCH_TOKEN, LOG_LEVEL: 'error', MONGODB_URI: uri, MONGODB_DB: 'bench' });
      const deps = composeDeps({ config, store, log: silentLogger, scheduler: noScheduler });
      const http = serviceApp(deps).listen(0, '127.0.0.1');
      await once(http, 'listening');
      const url = `http://127.0.0.1:${(http.address() as { port: number }).port}`;
      try {
        const applied = (await fetch(`${url}/admin/manifests`, { method: 'POST', headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(benchManifest()) }).then((r) => r.json())) as { apiKeys: Record<string, { key: string }> };
        const keys = Object.values(applied.apiKeys).map((k) => k.key);
        const key = keys[0];
        let sent = 0;
        const submit = async (idempotent: boolean, as = key) => {
          const headers: Record<string, string> = { authorization: `Bearer ${as}`, 'content-type': 'application/json' };
          if (idempotent) headers['idempotency-key'] = `round-trips-${sent}`;
          sent++;
          const res = await fetch(`${url}/v1/purchase-requests`, { method: 'POST', headers, body: BENCH_BODY });
          if (res.status !== 201) throw new Error(`decision failed: ${res.status} ${await res.text()}`);
        };
        const measure = async (idempotent: boolean): Promise<PerDecision> => {
          for (let i = 0; i < 5; i++) await submit(idempotent); // windows exist and caches are warm, as in steady state
          total = 0;
          inTransaction.clear();
          for (let i = 0; i < decisions; i++) await submit(idempotent);
          const per = (n: number) => Math.round((n / decisions) * 100) / 100;
          const byCommand = Object.fromEntries([...inTransaction].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => [name, per(n)]));
          return { perDecision: per(total), inTransactionPerDecision: per([...inTransaction.values()].reduce((a, b) => a + b, 0)), inTransactionByCommand: byCommand };
        };
        const plain = await measure(false);
        const withIdempotencyKey = await measure(true);
        // Every agent at once, a few decisions each: the retries the shared chain head costs.
        const { registry } = await import('../src/metrics/metrics.ts');
        const retries = async () => ((await registry.getSingleMetric('spend_store_transaction_retries_total')!.get()).values[0]?.value ?? 0);
        const concurrency = keys.length;
        const rounds = 5;
        const retriesBefore = await retries();
        total = 0;
        for (let round = 0; round < rounds; round++) await Promise.all(keys.map((k) => submit(false, k)));
        const decided = concurrency * rounds;
        const contention = {
          decisions: decided,
          concurrency,
          retriesPerDecision: Math.round(((await retries()) - retriesBefore) / decided * 100) / 100,
          roundTripsPerDecision: Math.round((total / decided) * 100) / 100,
        };
        return { server, plain, withIdempotencyKey, contention };
      } finally {
        http.close();
      }
    } finally {
      await store.db.raw.dropDatabase().catch(() => {});
      await store.close();
    }
  });
}

if (import.meta.main) process.stdout.write(JSON.stringify(await countRoundTrips(Number(process.argv[2] || 50))) + '\n');
