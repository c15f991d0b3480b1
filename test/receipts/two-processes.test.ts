// One chain per organisation across processes (docs/integrate/receipts.md): two service processes on
// one DATA_DIR take 200 concurrent purchases from four agents of one organisation; the receipts they
// send are seq 1..200 without a gap or a fork, and the exported chain verifies offline.
import test from 'ava';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { startService, tempDataDir } from '../helpers/service-process.ts';

const run = promisify(execFile);
const AGENTS = ['a', 'b', 'c', 'd'];

test('200 concurrent purchases of four agents across two processes: receipts seq 1..200, one valid chain', async (t) => {
  const dataDir = tempDataDir(t);
  const one = await startService(t, dataDir);
  const two = await startService(t, dataDir, { RUN_JOBS: '0' });
  const applied = await one.admin('/admin/manifests', {
    organization: { handle: 'chained', name: 'Chained', currency: 'EUR', timezone: 'Europe/Berlin', approvalTtl: 'PT24H' },
    people: [{ handle: 'ana', name: 'Ana', email: 'ana@chained.example' }],
    agents: AGENTS.map((h) => ({ handle: h, name: h })),
    policies: [
      {
        handle: 'cap',
        name: 'Cap',
        scope: 'ORGANIZATION',
        currencies: ['EUR'],
        rules: [{ ruleType: 'AMOUNT_LIMIT', effect: 'REQUIRE_APPROVAL', periodKind: 'PER_REQUEST', amountMinor: '5000' }],
        merchants: [],
      },
    ],
    apiKeys: AGENTS.map((h) => ({ handle: `${h}-key`, agent: h })),
  });
  t.is(applied.status, 200);
  const organizationId: string = applied.body.organization.id;
  const results = await Promise.all(
    Array.from({ length: 200 }, async (_, i) => {
      const svc = i % 2 === 0 ? one : two;
      const res = await fetch(`${svc.url}/v1/purchase-requests`, {
        method: 'POST',
        headers: { authorization: `Bearer ${applied.body.apiKeys[`${AGENTS[i % 4]}-key`].key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ merchant: 'Paper Co', amountMinor: String(100 + (i % 7) * 1000), reason: `item ${i}` }),
      });
      return { status: res.status, receipt: res.headers.get('decision-receipt') };
    }),
  );
  t.deepEqual(results.filter((r) => r.status !== 201), [], 'every purchase decided');
  const seqs = results.map((r) => JSON.parse(Buffer.from(r.receipt!.split('.')[1], 'base64url').toString()).seq as number).sort((a, b) => a - b);
  t.deepEqual(seqs, Array.from({ length: 200 }, (_, i) => i + 1), 'seq 1..200: no gap, no seq twice');

  const env = { ...process.env, DATA_DIR: dataDir, MONGODB_URI: '' };
  const exported = await run(process.execPath, ['scripts/admin.ts', 'export-log', organizationId], { env, maxBuffer: 16 << 20 });
  const file = join(dirname(dataDir), 'export.jsonl');
  writeFileSync(file, exported.stdout);
  const jwks = join(dirname(dataDir), 'jwks.json');
  writeFileSync(jwks, await fetch(`${two.url}/.well-known/jwks.json`).then((r) => r.text()));
  const verified = await run(process.execPath, ['scripts/verify-receipts.ts', '--jwks', jwks, file], { env });
  t.regex(verified.stdout, /200 receipt\(s\), seq 1\.\.200, verified/);
  const sentReceipts = new Set(results.map((r) => r.receipt));
  t.true(exported.stdout.trimEnd().split('\n').every((l) => sentReceipts.has(JSON.parse(l).receipt)), 'the chain holds exactly the receipts sent');
  const log = await run(process.execPath, ['scripts/admin.ts', 'verify-log', organizationId], { env });
  t.regex(log.stdout, /200 receipt\(s\)/);
});
