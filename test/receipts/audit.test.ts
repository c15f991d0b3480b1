// The auditor's tools as an auditor runs them (docs/operate/auditors.md), against a service on a DATA_DIR:
// `npm run admin -- rotate-signing-key` (old receipts keep verifying), `export-log`, `verify-receipts`
// offline (an altered payload, a reordered file, a removed line: exit 1 naming the seq), `verify-log`
// (a decision's outcome changed straight in SQLite: exit 1 naming its seq), and the Python check of
// docs/operate/auditors.md run as written.
import test from 'ava';
import { execFile } from 'node:child_process';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { promisify } from 'node:util';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest, type AppliedOrg } from '../helpers/fixtures.ts';
import { openEmbeddedStore, type EmbeddedStore } from '../../src/store/embedded/embedded-store.ts';

const run = promisify(execFile);
// The service and the CLI seal the signing keys with the same key, as on one deployment.
const WEBHOOK_ENCRYPTION_KEY = 'ab'.repeat(32);
const dir = mkdtempSync(join(tmpdir(), 'receipts-audit-'));
const dataDir = join(dir, 'data');
let store: EmbeddedStore;
let app: TestApp;
let org: AppliedOrg;
/** The receipts of every decision made here, by seq, as the service sent them. */
const sent = new Map<number, string>();

/** A command run as an operator runs it, on the test's store. */
async function command(file: string, args: string[], env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run(file, args, { env: { ...process.env, DATA_DIR: dataDir, MONGODB_URI: '', WEBHOOK_ENCRYPTION_KEY, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err: any) {
    return { code: err.code as number, stdout: err.stdout as string, stderr: err.stderr as string };
  }
}

const cli = (script: string, args: string[], env: Record<string, string> = {}) => command(process.execPath, [script, ...args], env);

const seqOf = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[1], 'base64url').toString()).seq as number;
const kidOf = (jws: string) => JSON.parse(Buffer.from(jws.split('.')[0], 'base64url').toString()).kid as string;

async function buy(amountMinor: string, key = 'buyer-key') {
  const res = await app.request('/v1/purchase-requests', { key: org.keys[key], body: { merchant: 'Paper Co', amountMinor, reason: 'paper' } });
  if (res.status !== 201) throw new Error(res.text);
  const jws = res.headers.get('decision-receipt')!;
  sent.set(seqOf(jws), jws);
  return res;
}

let jwksFile: string;
let exportFile: string;
let oldKid: string;

test.before(async () => {
  store = await openEmbeddedStore({ dataDir });
  app = await startApp({ store, env: { WEBHOOK_ENCRYPTION_KEY } });
  org = await applyManifest(app, acmeManifest('audited'));
  for (let i = 0; i < 3; i++) await buy(String(1000 + i));
  const held = await buy('30000');
  const answered = await app.admin(`/admin/purchase-requests/${held.body.purchaseRequest.id}/answer`, { body: { answer: 'APPROVE', person: 'ana', comment: null } });
  if (answered.status !== 200) throw new Error(answered.text);
  const listed = await app.request(`/v1/purchase-requests/${held.body.purchaseRequest.id}/receipts`, { key: org.keys['buyer-key'] });
  for (const r of listed.body.receipts) sent.set(r.seq, r.receipt);
  oldKid = kidOf(sent.get(1)!);
  const rotated = await cli('scripts/admin.ts', ['rotate-signing-key']);
  if (rotated.code !== 0) throw new Error(rotated.stderr);
  for (let i = 0; i < 3; i++) await buy(String(2000 + i), 'travel-key');
  jwksFile = join(dir, 'jwks.json');
  writeFileSync(jwksFile, await fetch(`${app.url}/.well-known/jwks.json`).then((r) => r.text()));
  const exported = await cli('scripts/admin.ts', ['export-log', org.organizationId]);
  if (exported.code !== 0) throw new Error(exported.stderr);
  exportFile = join(dir, 'export.jsonl');
  writeFileSync(exportFile, exported.stdout);
});
test.after.always(async () => {
  await app?.close();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

const lines = () => readFileSync(exportFile, 'utf8').trimEnd().split('\n');

function variant(name: string, edit: (lines: string[]) => string[]): string {
  const file = join(dir, name);
  writeFileSync(file, edit(lines()).join('\n') + '\n');
  return file;
}

test('rotate-signing-key: the new key signs from the next decision on, and the old receipts still verify with the JWKS', async (t) => {
  const jwks = JSON.parse(readFileSync(jwksFile, 'utf8'));
  t.is(jwks.keys.length, 2, 'the retired key stays published');
  t.is(jwks.keys[1].kid, oldKid);
  const newKid = jwks.keys[0].kid;
  t.not(newKid, oldKid);
  t.is(kidOf(sent.get(5)!), oldKid);
  t.is(kidOf(sent.get(6)!), newKid, 'the first decision after the rotation');
  const verified = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, exportFile]);
  t.is(verified.code, 0, verified.stderr);
  t.regex(verified.stdout, /8 receipt\(s\), seq 1\.\.8, verified/);
  const byUrl = await cli('scripts/verify-receipts.ts', ['--jwks', `${app.url}/.well-known/jwks.json`, exportFile]);
  t.is(byUrl.code, 0, byUrl.stderr);
});

test('rotate-signing-key without the encryption key of the service is refused: the key it made would be one the service cannot open', async (t) => {
  const before = ((await fetch(`${app.url}/.well-known/jwks.json`).then((r) => r.json())) as { keys: unknown[] }).keys.length;
  for (const key of ['', 'cd'.repeat(32)]) {
    const res = await cli('scripts/admin.ts', ['rotate-signing-key'], { WEBHOOK_ENCRYPTION_KEY: key });
    t.is(res.code, 2, res.stdout);
    t.regex(res.stderr, /WEBHOOK_ENCRYPTION_KEY/);
  }
  t.is(((await fetch(`${app.url}/.well-known/jwks.json`).then((r) => r.json())) as { keys: unknown[] }).keys.length, before, 'no key was added');
});

test('the auditors page run as written: export-log through npm into a file, then verify-receipts through npm, verifies', async (t) => {
  const doc = readFileSync('docs/operate/auditors.md', 'utf8');
  const exportLine = /^(npm run [^\n#]*export-log <organizationId> > acme\.jsonl)/m.exec(doc)![1];
  const verifyLine = /^(npm run [^\n#]*verify-receipts -- --jwks jwks\.json acme\.jsonl)\s*$/m.exec(doc)![1];
  const file = join(dir, 'acme.jsonl');
  const sh = (line: string) => command('/bin/sh', ['-c', line]);
  const exported = await sh(exportLine.replace('<organizationId>', org.organizationId).replace('acme.jsonl', file));
  t.is(exported.code, 0, exported.stderr);
  const verified = await sh(verifyLine.replace('jwks.json', jwksFile).replace('acme.jsonl', file));
  t.is(verified.code, 0, verified.stderr);
});

test('export-log prints the chain as JSON Lines, the receipts the service sent, from --from on when asked', async (t) => {
  const all = lines().map((l) => JSON.parse(l));
  t.deepEqual(all.map((l) => l.seq), [1, 2, 3, 4, 5, 6, 7, 8]);
  for (const l of all) t.is(l.receipt, sent.get(l.seq));
  t.deepEqual(Object.keys(all[0]), ['seq', 'receipt']);
  const tail = await cli('scripts/admin.ts', ['export-log', org.organizationId, '--from', '6']);
  t.is(tail.code, 0);
  t.deepEqual(tail.stdout.trimEnd().split('\n').map((l) => JSON.parse(l).seq), [6, 7, 8]);
  const tailFile = join(dir, 'tail.jsonl');
  writeFileSync(tailFile, tail.stdout);
  const partial = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, '--from', '6', tailFile]);
  t.is(partial.code, 0, partial.stderr);
  t.regex(partial.stdout, /3 receipt\(s\), seq 6\.\.8, verified/);
  t.is((await cli('scripts/admin.ts', ['export-log'])).code, 2, 'no organisation: a usage mistake');
  t.is((await cli('scripts/admin.ts', ['export-log', org.organizationId, '--from', 'zero'])).code, 2);
  // verify-receipts' usage mistakes say what was wrong before the usage, as the operator CLI's do.
  for (const [args, why] of [
    [[tailFile], /^--jwks is required/],
    [['--jwks', jwksFile], /^give one export file \(got 0\)/],
    [['--jwks', jwksFile, '--form', '6', tailFile], /'--form'/],
  ] as const) {
    const mistake = await cli('scripts/verify-receipts.ts', [...args]);
    t.is(mistake.code, 2, args.join(' '));
    t.regex(mistake.stderr, why, args.join(' '));
    t.regex(mistake.stderr, /Usage: npm run verify-receipts/);
  }
});

test('verify-receipts: a sound log of another organisation is named as such, and fails with --organization naming the one asked for', async (t) => {
  // Another organisation's whole chain, signed by the same deployment.
  const other = await applyManifest(app, acmeManifest('audited-other'));
  const made = await app.request('/v1/purchase-requests', { key: other.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '100', reason: 'paper' } });
  t.is(made.status, 201, made.text);
  const exported = await cli('scripts/admin.ts', ['export-log', other.organizationId]);
  const otherFile = join(dir, 'other.jsonl');
  writeFileSync(otherFile, exported.stdout);
  const unnamed = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, otherFile]);
  t.is(unnamed.code, 0, unnamed.stderr);
  t.true(unnamed.stdout.includes(`organisation ${other.organizationId}`), unnamed.stdout);
  const named = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, '--organization', org.organizationId, otherFile]);
  t.is(named.code, 1, named.stdout);
  t.true(named.stderr.startsWith(`seq 1: the receipt is of organisation ${other.organizationId}, not ${org.organizationId}`), named.stderr);
  const own = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, '--organization', org.organizationId, exportFile]);
  t.is(own.code, 0, own.stderr);
  t.true(own.stdout.includes(`organisation ${org.organizationId}`), own.stdout);
  // Written in capitals, as export-log takes it too: the same organisation.
  const upper = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, '--organization', org.organizationId.toUpperCase(), exportFile]);
  t.is(upper.code, 0, upper.stderr);
});

test('--from takes decimal digits only: exponent, hex, sign, fraction or spaces exit 2 naming the value', async (t) => {
  for (const bad of ['1e3', '0x10', '+3', '6.0', ' 6', '0', '-1', '9007199254740993']) {
    const exported = await cli('scripts/admin.ts', ['export-log', org.organizationId, `--from=${bad}`]);
    t.is(exported.code, 2, `export-log --from ${JSON.stringify(bad)}: ${exported.stdout}`);
    t.true(exported.stderr.includes(`--from takes a seq, a whole number from 1 written in decimal digits only; not ${JSON.stringify(bad)}`), exported.stderr);
    t.is(exported.stdout, '');
    const verified = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, `--from=${bad}`, exportFile]);
    t.is(verified.code, 2, `verify-receipts --from ${JSON.stringify(bad)}: ${verified.stdout}`);
    t.true(verified.stderr.includes(`not ${JSON.stringify(bad)}`), verified.stderr);
  }
});

test('verify-receipts: an altered payload fails naming its seq', async (t) => {
  const file = variant('altered.jsonl', (ls) =>
    ls.map((l) => {
      const line = JSON.parse(l);
      if (line.seq !== 3) return l;
      const [h, p, s] = line.receipt.split('.');
      const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
      payload.outcome = 'REJECTED';
      return JSON.stringify({ seq: 3, receipt: `${h}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${s}` });
    }),
  );
  const res = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, file]);
  t.is(res.code, 1);
  t.regex(res.stderr, /^seq 3: the signature does not verify/);
});

test('verify-receipts: a reordered file fails naming the seq that is out of place', async (t) => {
  const file = variant('reordered.jsonl', (ls) => [ls[0], ls[1], ls[3], ls[2], ...ls.slice(4)]);
  const res = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, file]);
  t.is(res.code, 1);
  t.regex(res.stderr, /^seq 3: seq 3 was expected here, found 4/);
});

test('verify-receipts: a file with a line removed fails naming the missing seq', async (t) => {
  const file = variant('removed.jsonl', (ls) => ls.filter((l) => JSON.parse(l).seq !== 5));
  const res = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, file]);
  t.is(res.code, 1);
  t.regex(res.stderr, /^seq 5: seq 5 was expected here, found 6/);
  // Relabelling the lines after the gap is no way round it: the receipts say their own seq.
  const relabelled = variant('relabelled.jsonl', (ls) => ls.filter((l) => JSON.parse(l).seq !== 5).map((l) => JSON.stringify({ ...JSON.parse(l), seq: JSON.parse(l).seq > 5 ? JSON.parse(l).seq - 1 : JSON.parse(l).seq })));
  const again = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, relabelled]);
  t.is(again.code, 1);
  t.regex(again.stderr, /^seq 5: the receipt says seq 6/);
});

test('verify-receipts: a line that is JSON but not an object (null) fails naming its seq, it does not crash', async (t) => {
  const file = variant('null-line.jsonl', (ls) => ls.map((l) => (JSON.parse(l).seq === 4 ? 'null' : l)));
  const res = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, file]);
  t.is(res.code, 1);
  t.regex(res.stderr, /^seq 4: seq 4 was expected here, found null/);
});

test('verify-receipts: a file without its first lines fails naming seq 1; an export from a later seq needs --from, and must start there', async (t) => {
  // Without --from, a file that starts at seq 3 is the whole log with seq 1 and 2 removed.
  const headless = variant('headless.jsonl', (ls) => ls.slice(2));
  const res = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, headless]);
  t.is(res.code, 1, res.stdout);
  t.regex(res.stderr, /^seq 1: seq 1 was expected here, found 3/);
  // Told it starts at seq 2, the line of seq 2 is the one missing.
  const wrongFrom = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, '--from', '2', headless]);
  t.is(wrongFrom.code, 1, wrongFrom.stdout);
  t.regex(wrongFrom.stderr, /^seq 2: seq 2 was expected here, found 3/);
  t.is((await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, '--from', '0', headless])).code, 2, 'seq counts from 1');
});

test('verify-receipts: the last receipt with its signature spelled differently (non-canonical base64url) fails naming its seq', async (t) => {
  // The bytes decode the same, so the signature would verify; but it is not the receipt that was signed
  // and chained (its hash differs), and no receipt after it would show that.
  const file = variant('malleable.jsonl', (ls) =>
    ls.map((l, i) => {
      if (i !== ls.length - 1) return l;
      const line = JSON.parse(l);
      // The last of the signature's 86 characters carries 2 bits of its 64 bytes and 4 unused ones (zero).
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
      const respelled = line.receipt.slice(0, -1) + alphabet[alphabet.indexOf(line.receipt.at(-1)) + 1];
      return JSON.stringify({ seq: line.seq, receipt: respelled });
    }),
  );
  const res = await cli('scripts/verify-receipts.ts', ['--jwks', jwksFile, file]);
  t.is(res.code, 1, res.stdout);
  t.regex(res.stderr, /^seq 8: its signature is not spelled in base64url as signed/);
});

test('verify-receipts: a receipt whose header names critical extensions (crit, b64 false) is refused, though its signature verifies', async (t) => {
  // Signed by a key of the JWKS: only the key's holder could make it, and a JOSE library would read its
  // payload as the literal base64url text, not the decision this verifier would report.
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  const kid = 'crit-test-key';
  const jwks = join(dir, 'crit-jwks.json');
  writeFileSync(jwks, JSON.stringify({ keys: [{ kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' }] }));
  const payload = sent.get(1)!.split('.')[1];
  const header = Buffer.from(JSON.stringify({ alg: 'EdDSA', kid, typ: 'decision-receipt+jwt', crit: ['b64'], b64: false })).toString('base64url');
  const input = `${header}.${payload}`;
  const file = join(dir, 'crit.jsonl');
  writeFileSync(file, JSON.stringify({ seq: 1, receipt: `${input}.${sign(null, Buffer.from(input), privateKey).toString('base64url')}` }) + '\n');
  const res = await cli('scripts/verify-receipts.ts', ['--jwks', jwks, file]);
  t.is(res.code, 1, res.stdout);
  t.regex(res.stderr, /^seq 1: its header names critical extensions/);
});

test('verify-receipts: a JWKS that holds a private part is refused (exit 2): receipts under a published private key prove nothing', async (t) => {
  const jwks = JSON.parse(readFileSync(jwksFile, 'utf8'));
  jwks.keys[1].d = Buffer.alloc(32, 1).toString('base64url');
  const leaky = join(dir, 'leaky-jwks.json');
  writeFileSync(leaky, JSON.stringify(jwks));
  const res = await cli('scripts/verify-receipts.ts', ['--jwks', leaky, exportFile]);
  t.is(res.code, 2, res.stdout);
  t.regex(res.stderr, /private/);
});

test('verify-receipts: usage mistakes and unreadable keys exit 2', async (t) => {
  t.is((await cli('scripts/verify-receipts.ts', [exportFile])).code, 2);
  t.is((await cli('scripts/verify-receipts.ts', ['--jwks', join(dir, 'no-such.json'), exportFile])).code, 2);
  const noKeys = join(dir, 'empty-jwks.json');
  writeFileSync(noKeys, JSON.stringify({ keys: [] }));
  const res = await cli('scripts/verify-receipts.ts', ['--jwks', noKeys, exportFile]);
  t.is(res.code, 1);
  t.regex(res.stderr, /^seq 1: signed with key .* which is not in the JWKS/);
});

test('the Python check of docs/operate/auditors.md verifies a receipt, and refuses an altered one', async (t) => {
  const doc = readFileSync('docs/operate/auditors.md', 'utf8');
  const snippet = /```python\n([\s\S]*?)```/.exec(doc)![1];
  const script = join(dir, 'verify_receipt.py');
  writeFileSync(script, snippet);
  const check = async (jws: string) => {
    try {
      return { code: 0, ...(await run('python3', [script, jwksFile, jws])) };
    } catch (err: any) {
      return { code: err.code as number, stdout: err.stdout as string, stderr: err.stderr as string };
    }
  };
  const ok = await check(sent.get(2)!);
  t.is(ok.code, 0, ok.stderr);
  t.is(JSON.parse(ok.stdout).seq, 2);
  t.is((await check(sent.get(7)!)).code, 0, 'one signed with the new key too');
  const [h, p, s] = sent.get(2)!.split('.');
  const forged = JSON.parse(Buffer.from(p, 'base64url').toString());
  forged.amountMinor = '1';
  t.not((await check(`${h}.${Buffer.from(JSON.stringify(forged)).toString('base64url')}.${s}`)).code, 0);
});

test('the chain-link check of docs/operate/auditors.md, run as written in Python, matches the prev of the next receipt', async (t) => {
  const doc = readFileSync('docs/operate/auditors.md', 'utf8');
  const expression = /`prev` of receipt n\+1 is\s+`([^`]+)`/.exec(doc)![1];
  const script = [
    'import base64, hashlib, json, sys',
    'def b64(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))',
    'receipt_n, receipt_next = sys.argv[1], sys.argv[2]',
    `print(json.dumps(${expression} == json.loads(b64(receipt_next.split(".")[1]))["prev"]))`,
  ].join('\n');
  const { stdout } = await run('python3', ['-c', script, sent.get(2)!, sent.get(3)!]);
  t.is(stdout.trim(), 'true');
});

test('verify-log: a decision whose receipt was deleted with the chain head rewound to the receipt before is found', async (t) => {
  // An organisation of its own: this test edits the store too.
  const tail = await applyManifest(app, acmeManifest('audited-tail'));
  const receipts: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await app.request('/v1/purchase-requests', { key: tail.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: String(100 + i), reason: 'paper' } });
    t.is(res.status, 201, res.text);
    receipts.push(res.headers.get('decision-receipt')!);
  }
  t.is((await cli('scripts/admin.ts', ['verify-log', tail.organizationId])).code, 0);
  // The last receipt goes, and the head is set back to the one before: the chain that is left is whole.
  const last = JSON.parse(Buffer.from(receipts[2].split('.')[1], 'base64url').toString());
  t.is(last.seq, 3);
  await store.db.collection<{ _id: string }>('receipts').deleteOne({ _id: `${tail.organizationId}:3` });
  const rewound = await store.db
    .collection<{ _id: string; seq: number; head: string }>('receipt_chains')
    .updateOne({ _id: tail.organizationId }, { $set: { seq: 2, head: createHash('sha256').update(receipts[1]).digest('base64url') } });
  t.is(rewound.modifiedCount, 1);
  const found = await cli('scripts/admin.ts', ['verify-log', tail.organizationId]);
  t.is(found.code, 1, found.stdout);
  t.regex(found.stderr, new RegExp(`seq 3 is bad: decision ${last.decisionId} of purchase ${last.purchaseRequestId} .* has no receipt`));
});

// It edits the store; the other tests read only what was exported before.
test('verify-log: the stored chain agrees with the stored decisions until one is changed straight in SQLite, then it names the seq', async (t) => {
  const clean = await cli('scripts/admin.ts', ['verify-log', org.organizationId]);
  t.is(clean.code, 0, clean.stderr);
  t.regex(clean.stdout, /8 receipt\(s\), seq 1\.\.8/);
  const decisionId = JSON.parse(Buffer.from(sent.get(2)!.split('.')[1], 'base64url').toString()).decisionId;
  // Other tests (and their CLI processes) use the store meanwhile: wait for their locks.
  const sqlite = new DatabaseSync(store.location, { timeout: 10_000 });
  try {
    const changed = sqlite.prepare(`UPDATE decisions SET doc = json_set(doc, '$.outcome', 'REJECTED') WHERE id = ?`).run(`s${decisionId}`);
    t.is(changed.changes, 1);
  } finally {
    sqlite.close();
  }
  const found = await cli('scripts/admin.ts', ['verify-log', org.organizationId]);
  t.is(found.code, 1);
  t.regex(found.stderr, /seq 2 is bad: the stored outcome is "REJECTED", the receipt says "APPROVED"/);
});

test('verify-log and export-log refuse an organisation the store does not hold (its handle, say) rather than report an empty chain as sound', async (t) => {
  for (const id of ['audited', '0190aaaa-0000-7000-8000-000000000000']) {
    for (const command of ['verify-log', 'export-log']) {
      const res = await cli('scripts/admin.ts', [command, id]);
      t.is(res.code, 2, `${command} ${id}: ${res.stdout}`);
      t.is(res.stdout, '');
      t.regex(res.stderr, new RegExp(`no organisation ${id} in the store`));
    }
  }
  // An id written in capitals is the same organisation.
  const upper = await cli('scripts/admin.ts', ['export-log', org.organizationId.toUpperCase()]);
  t.is(upper.code, 0, upper.stderr);
  t.is(upper.stdout.trimEnd().split('\n')[0], lines()[0]);
});
