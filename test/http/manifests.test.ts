// Organisation manifests and the operator API (docs/internals/design.md §5) through real HTTP.
import test from 'ava';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { stringify } from 'yaml';
import { MANIFEST_LIMIT } from '../../src/admin/manifest-body.ts';
import { runService } from '../helpers/service-process.ts';
import { startApp, type TestApp } from '../helpers/app.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';

let app: TestApp;
test.before(async () => {
  app = await startApp();
});
test.after.always(() => app?.close());

/** `levels` objects and arrays nested in one another (the outermost is level 1). */
const nested = (levels: number): unknown => {
  let v: unknown = 'leaf';
  for (let i = 0; i < levels; i++) v = i % 2 ? { k: v } : [v];
  return v;
};

const counts = async () => {
  const out: Record<string, number> = {};
  for (const name of ['organizations', 'people', 'agents', 'policies', 'policy_versions', 'api_keys', 'policy_views', 'events']) {
    out[name] = await app.store.db.collection(name).countDocuments({});
  }
  return out;
};

test.serial('applying the same manifest twice changes nothing and shows no key again', async (t) => {
  const manifest = acmeManifest('twice');
  const first = await applyManifest(app, manifest);
  t.is(Object.keys(first.keys).length, 3);
  for (const k of Object.values(first.keys)) t.regex(k, /^cmp_live_[a-z0-9]{12}_[A-Za-z0-9_-]{43}$/);
  const before = await counts();
  const second = await app.admin('/admin/manifests', { body: manifest });
  t.is(second.status, 200);
  t.deepEqual(await counts(), before);
  t.is(second.body.organization.id, first.organizationId);
  t.deepEqual(second.body.policies, first.policies);
  for (const [handle, k] of Object.entries(second.body.apiKeys as Record<string, any>)) {
    t.is(k.key, undefined, `${handle} secret is shown only once`);
    t.is(k.prefix, first.result.apiKeys[handle].prefix);
  }
});

test('a changed policy gets a new version; activate:false leaves it DRAFT until activated', async (t) => {
  const manifest = acmeManifest('versions');
  const first = await applyManifest(app, manifest);
  const key = first.keys['admin-key'];
  const office = manifest.policies[0] as any;
  office.rules[0].amountMinor = '60000';
  office.activate = false;
  const second = await applyManifest(app, manifest);
  t.is(second.policies.office.activeVersionId, first.policies.office.activeVersionId);
  t.truthy(second.policies.office.draftVersionId);
  let res = await app.request(`/v1/policies/${first.policies.office.id}`, { key });
  t.deepEqual(res.body.policy.versions.map((v: any) => [v.versionNumber, v.status]), [[2, 'DRAFT'], [1, 'ACTIVE']]);

  office.activate = true;
  const third = await applyManifest(app, manifest);
  t.is(third.policies.office.activeVersionId, second.policies.office.draftVersionId);
  t.is(third.policies.office.draftVersionId, null);
  res = await app.request(`/v1/policies/${first.policies.office.id}`, { key });
  t.deepEqual(res.body.policy.versions.map((v: any) => [v.versionNumber, v.status]), [[2, 'ACTIVE'], [1, 'ARCHIVED']]);
  t.truthy(res.body.policy.versions[1].archivedAt);
  t.is(res.body.policy.activeVersion.versionNumber, 2);

  // Reordering rules is not a change.
  office.rules.reverse();
  const fourth = await applyManifest(app, manifest);
  t.deepEqual(fourth.policies, third.policies);
});

test.serial('an invalid manifest is refused whole, listing every problem, and nothing is written', async (t) => {
  const manifest: any = acmeManifest('invalid');
  manifest.organization.currency = 'EUROS';
  manifest.organization.timezone = 'Mars/Olympus';
  manifest.policies[0].rules[0].amountMinor = '-5';
  manifest.policies[1].agents = ['ghost'];
  manifest.apiKeys.push({ handle: 'buyer-key', agent: 'buyer' });
  manifest.surprise = true;
  const before = await counts();
  const res = await app.admin('/admin/manifests', { body: manifest });
  t.is(res.status, 400);
  t.is(res.body.error.code, 'invalid_request');
  t.true(res.body.error.issues.some((i: any) => i.code === 'UNKNOWN_FIELD' && i.path === 'surprise'));
  t.true(res.body.error.issues.some((i: any) => i.path === 'organization.currency'));
  delete manifest.surprise;
  manifest.organization.currency = 'XYZ';
  const res2 = await app.admin('/admin/manifests', { body: manifest });
  t.is(res2.status, 400);
  const codes = res2.body.error.issues.map((i: any) => i.code).sort();
  t.deepEqual(codes, ['AMOUNT_NOT_POSITIVE', 'CURRENCY_NOT_ISO_4217', 'DUPLICATE_HANDLE', 'INVALID_TIMEZONE', 'UNKNOWN_AGENT']);
  t.deepEqual(await counts(), before);
});

test.serial('rebinding keys is refused with every other problem, each at the key\'s index, and nothing is written', async (t) => {
  const manifest: any = acmeManifest('rebind');
  await applyManifest(app, manifest);
  // buyer-key (0) to the travel agent, admin-key (2) to the buyer: two keys whose binding cannot change.
  manifest.apiKeys[0].agent = 'travel';
  manifest.apiKeys[2].agent = 'buyer';
  manifest.organization.timezone = 'Mars/Olympus';
  const before = await counts();
  const res = await app.admin('/admin/manifests', { body: manifest });
  t.is(res.status, 400, res.text);
  t.deepEqual(
    res.body.error.issues.map((i: any) => `${i.path}:${i.code}`).sort(),
    ['apiKeys.0.agent:KEY_BINDING_IMMUTABLE', 'apiKeys.2.agent:KEY_BINDING_IMMUTABLE', 'organization.timezone:INVALID_TIMEZONE'],
  );
  t.deepEqual(await counts(), before);
});

test.serial('a revoked key stays revoked: `revoked: false` is refused at the key, and leaving `revoked` out changes nothing', async (t) => {
  const manifest: any = acmeManifest('unrevoke');
  const org = await applyManifest(app, manifest);
  // Revoked outside the manifest, as an operator or the dashboard would.
  t.is((await app.admin(`/admin/api-keys/${org.keyIds['buyer-key']}`, { method: 'DELETE' })).status, 200);
  manifest.apiKeys[0].revoked = false;
  const before = await counts();
  const res = await app.admin('/admin/manifests', { body: manifest });
  t.is(res.status, 400, res.text);
  t.deepEqual(res.body.error.issues.map((i: any) => `${i.path}:${i.code}`), ['apiKeys.0.revoked:KEY_REVOKED']);
  t.deepEqual(await counts(), before);
  const refused = await app.request('/v1/agents', { key: org.keys['buyer-key'] });
  t.is(refused.body.error.code, 'api_key_revoked');

  delete manifest.apiKeys[0].revoked;
  t.is((await app.admin('/admin/manifests', { body: manifest })).status, 200);
  t.is((await app.request('/v1/agents', { key: org.keys['buyer-key'] })).body.error.code, 'api_key_revoked');
});

test.serial('a value outside a closed list is INVALID_VALUE naming the values allowed, in a manifest and on the operator API', async (t) => {
  const manifest: any = acmeManifest('closed-lists');
  manifest.policies[0].rules[0].effect = 'DENY';
  manifest.policies[0].rules[1].periodKind = 'WEEK';
  const before = await counts();
  const res = await app.admin('/admin/manifests', { body: manifest });
  t.is(res.status, 400, res.text);
  t.deepEqual(
    res.body.error.issues.map((i: any) => [i.path, i.code, i.message]),
    [
      ['policies.0.rules.0.effect', 'INVALID_VALUE', '"policies.0.rules.0.effect" is one of BLOCK, REQUIRE_APPROVAL.'],
      ['policies.0.rules.1.periodKind', 'INVALID_VALUE', '"policies.0.rules.1.periodKind" is one of PER_REQUEST, DAY, MONTH.'],
    ],
  );
  t.deepEqual(await counts(), before);
  // A value of the wrong type is still INVALID_TYPE, with the same list.
  const acme = await applyManifest(app, acmeManifest('closed-lists-ok'));
  const agent = await app.admin(`/admin/agents/${acme.agents.buyer.id}`, { method: 'PATCH', body: { status: 'DELETED' } });
  t.is(agent.status, 400);
  t.deepEqual(agent.body.error.issues, [{ path: 'status', code: 'INVALID_VALUE', message: '"status" is one of ENABLED, DISABLED, ARCHIVED.' }]);
  const typed = await app.admin(`/admin/organizations/${acme.organizationId}`, { method: 'PATCH', body: { status: 1 } });
  t.deepEqual(typed.body.error.issues, [{ path: 'status', code: 'INVALID_TYPE', message: '"status" is one of ACTIVE, SUSPENDED.' }]);
  t.is((await app.deps.collections.agents.findOne({ _id: acme.agents.buyer.id }))?.status, 'ENABLED');
});

test.serial('a limit written as a JSON or YAML integer above 2^53-1 is AMOUNT_TOO_LARGE, as its string is', async (t) => {
  const before = await counts();
  const json = JSON.stringify(acmeManifest('huge-limit')).replace('"amountMinor":"50000"', '"amountMinor":9007199254740993');
  const asJson = await app.admin('/admin/manifests', { raw: json, headers: { 'content-type': 'application/json' } });
  t.is(asJson.status, 400, asJson.text);
  t.deepEqual(asJson.body.error.issues.map((i: any) => [i.path, i.code]), [['policies.0.rules.0.amountMinor', 'AMOUNT_TOO_LARGE']]);
  const asYaml = await app.admin('/admin/manifests', { raw: stringify(JSON.parse(json)).replace('amountMinor: 9007199254740992', 'amountMinor: 9007199254740993'), headers: { 'content-type': 'application/yaml' } });
  t.is(asYaml.status, 400, asYaml.text);
  t.deepEqual(asYaml.body.error.issues.map((i: any) => [i.path, i.code]), [['policies.0.rules.0.amountMinor', 'AMOUNT_TOO_LARGE']]);
  t.deepEqual(await counts(), before);
});

test.serial('a limit or a quorum written beyond a double\'s range is judged by its value, in JSON and in YAML', async (t) => {
  const before = await counts();
  const huge = '9'.repeat(400);
  const cases: Array<[string, string, string]> = [
    [huge, 'policies.0.rules.1.amountMinor', 'AMOUNT_TOO_LARGE'],
    [`-${huge}`, 'policies.0.rules.1.amountMinor', 'AMOUNT_NOT_POSITIVE'],
    ['"20000", "approvalsRequired": ' + huge, 'policies.0.rules.1.approvalsRequired', 'OUT_OF_RANGE'],
  ];
  for (const [written, path, code] of cases) {
    const manifest = acmeManifest('beyond-double');
    const json = JSON.stringify(manifest).replace('"amountMinor":"20000"', `"amountMinor":${written}`);
    // The same document in YAML (JSON is YAML), for YAML's own number reading.
    for (const [type, raw] of [['application/json', json], ['application/yaml', json.replace(/,"/g, ', "')]]) {
      const res = await app.admin('/admin/manifests', { raw, headers: { 'content-type': type! } });
      t.is(res.status, 400, `${type} ${path}: ${res.text}`);
      t.deepEqual(res.body.error.issues.map((i: any) => [i.path, i.code]), [[path, code]], `${type} ${written.slice(0, 12)}`);
    }
  }
  t.deepEqual(await counts(), before);
});

test.serial('a quorum written with a fraction or an exponent is refused as 1.5 is, in JSON and in YAML, not rounded', async (t) => {
  const before = await counts();
  for (const written of ['2.0', '2e0', '1.0000000000000001', '20E-1', '1.5']) {
    const json = JSON.stringify(acmeManifest('quorum-written')).replace('"amountMinor":"20000"', `"amountMinor":"20000","approvalsRequired":${written}`);
    for (const [type, raw] of [['application/json', json], ['application/yaml', json]]) {
      const res = await app.admin('/admin/manifests', { raw, headers: { 'content-type': type! } });
      t.is(res.status, 400, `${type} ${written}: ${res.text}`);
      t.deepEqual(res.body.error.issues.map((i: any) => [i.path, i.code]), [['policies.0.rules.1.approvalsRequired', 'INVALID_TYPE']], `${type} ${written}`);
    }
  }
  t.deepEqual(await counts(), before);
  const ok = await app.admin('/admin/manifests', { raw: JSON.stringify(acmeManifest('quorum-written')).replace('"amountMinor":"20000"', '"amountMinor":"20000","approvalsRequired":2'), headers: { 'content-type': 'application/json' } });
  t.is(ok.status, 200, ok.text);
});

test.serial('a YAML tag the reader does not know is refused, not read as the text after it; a collection as a key writes no warning', async (t) => {
  const before = await counts();
  const text = stringify(acmeManifest('yaml-tags'));
  for (const tag of ['!!js/function', '!custom']) {
    const res = await app.admin('/admin/manifests', { raw: text.replace('name: Acme Robotics', `name: ${tag} "Acme Robotics"`), headers: { 'content-type': 'application/yaml' } });
    t.is(res.status, 400, `${tag}: ${res.text}`);
    t.is(res.body.error.code, 'malformed_json', tag);
    t.regex(res.body.error.message, /not valid YAML: Unresolved tag/, tag);
  }
  t.deepEqual(await counts(), before);
  // The yaml package wrote a process warning to stderr for each such key, at the client's will.
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    const res = await app.admin('/admin/manifests', { raw: text.replace('organization:\n', 'organization:\n  ? [a, b]\n  : 1\n'), headers: { 'content-type': 'application/yaml' } });
    t.deepEqual(res.body.error.issues.map((i: any) => i.code), ['UNKNOWN_FIELD'], res.text);
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', onWarning);
  }
  t.deepEqual(warnings.map((w) => w.message), []);
});

test.serial('a %YAML 1.1 directive does not change what the text means: 020000 is still 20000, yes is still text', async (t) => {
  const manifest = acmeManifest('yaml-one-one');
  manifest.agents[0]!.name = 'yes';
  const text = '%YAML 1.1\n---\n' + stringify(manifest).replace('amountMinor: "20000"', 'amountMinor: 020000');
  const res = await app.admin('/admin/manifests', { raw: text, headers: { 'content-type': 'application/yaml' } });
  t.is(res.status, 200, res.text);
  const key = res.body.apiKeys['admin-key'].key;
  const office = res.body.policies.office;
  const version = await app.request(`/v1/policies/${office.id}/versions/${office.activeVersionId}`, { key });
  t.deepEqual(version.body.version.rules.map((r: any) => r.amountMinor), ['50000', '20000', '200000'], version.text);
  const agents = await app.request('/v1/agents', { key });
  t.true(agents.body.agents.some((a: any) => a.name === 'yes'), agents.text);
});

test.serial('a manifest sent with a Content-Encoding is decoded as JSON bodies are; an unknown one is 415', async (t) => {
  const before = await counts();
  const send = (raw: Buffer | string, encoding: string) => app.admin('/admin/manifests', { raw, headers: { 'content-type': 'application/json', 'content-encoding': encoding } });
  const text = JSON.stringify(acmeManifest('compressed'));
  const unknown = await send(text, 'compress');
  t.is(unknown.status, 415, unknown.text);
  t.is(unknown.body.error.code, 'unsupported_media_type');
  const broken = await send('not gzip at all', 'gzip');
  t.is(broken.status, 400, broken.text);
  t.is(broken.body.error.code, 'malformed_json');
  // Past the limit once decoded, however small compressed.
  const bomb = await send(gzipSync(`{"organization":${' '.repeat(MANIFEST_LIMIT)}}`), 'gzip');
  t.is(bomb.status, 413, bomb.text);
  t.deepEqual(await counts(), before);
  for (const [encoding, compress] of [['gzip', gzipSync], ['Deflate', deflateSync], ['br', brotliCompressSync]] as const) {
    const res = await send(compress(text), encoding);
    t.is(res.status, 200, `${encoding}: ${res.text}`);
  }
});

test.serial('manifests and JSON bodies are read by one reader: the same codings, refusals and media types on both routes', async (t) => {
  const org = await applyManifest(app, acmeManifest('one-reader'));
  const agentId = org.agents.buyer.id;
  const manifest = (raw: Buffer | string, headers: Record<string, string>) => app.admin('/admin/manifests', { raw, headers });
  const patch = (raw: Buffer | string, headers: Record<string, string>) => app.admin(`/admin/agents/${agentId}`, { method: 'PATCH', raw, headers });
  const json = { 'content-type': 'application/json' };
  // Refused alike, with the same answer: an unknown coding, bytes that are not what their coding says.
  for (const [raw, encoding] of [['{}', 'compress'], ['not gzip at all', 'gzip'], ['not brotli', 'br']] as const) {
    const [a, b] = [await manifest(raw, { ...json, 'content-encoding': encoding }), await patch(raw, { ...json, 'content-encoding': encoding })];
    t.is(a.status, b.status, encoding);
    t.is(a.body.error.code, b.body.error.code, encoding);
    t.is(a.body.error.message.replace('The manifest', 'The request body'), b.body.error.message, encoding);
  }
  // A gzip stream labelled deflate: the JSON bodies' reader inflates either; the manifest's own table refused it.
  const asDeflate = { ...json, 'content-encoding': 'deflate' };
  t.is((await patch(gzipSync('{"status":"ENABLED"}'), asDeflate)).status, 200);
  const relabelled = await manifest(gzipSync(JSON.stringify(acmeManifest('one-reader'))), asDeflate);
  t.is(relabelled.status, 200, relabelled.text);
  // application/*+json is JSON on every write (docs/reference/decisions.md), manifests included: they answered 415.
  const vendorJson = await manifest(JSON.stringify(acmeManifest('one-reader')), { 'content-type': 'application/vnd.acme+json' });
  t.is(vendorJson.status, 200, vendorJson.text);
  // A compressed YAML manifest, and the limit counted on the decoded bytes to the byte.
  const yaml = { 'content-type': 'application/yaml', 'content-encoding': 'br' };
  const text = stringify(acmeManifest('one-reader'));
  t.is((await manifest(brotliCompressSync(text), yaml)).status, 200);
  const padded = (size: number) => brotliCompressSync(text + '#'.repeat(size - Buffer.byteLength(text) - 1) + '\n');
  const atLimit = await manifest(padded(MANIFEST_LIMIT), yaml);
  t.is(atLimit.status, 200, atLimit.text);
  const over = await manifest(padded(MANIFEST_LIMIT + 1), yaml);
  t.is(over.status, 413, over.text);
  t.is(over.body.error.code, 'payload_too_large');
});

test.serial('a YAML limit written otherwise than as an integer is AMOUNT_NOT_INTEGER as in JSON and in a purchase, not rounded or read as hex', async (t) => {
  const before = await counts();
  const text = stringify(acmeManifest('yaml-numbers'));
  t.true(text.includes('amountMinor: "50000"'));
  for (const written of ['1e3', '100.0', '0x10', '0o17', '0.99999999999999999', '+5e0']) {
    const res = await app.admin('/admin/manifests', { raw: text.replace('amountMinor: "50000"', `amountMinor: ${written}`), headers: { 'content-type': 'application/yaml' } });
    t.is(res.status, 400, `${written}: ${res.text}`);
    t.deepEqual(res.body.error.issues.map((i: any) => `${i.path}:${i.code}`), ['policies.0.rules.0.amountMinor:AMOUNT_NOT_INTEGER'], written);
  }
  const json = await app.admin('/admin/manifests', { raw: JSON.stringify(acmeManifest('yaml-numbers')).replace('"amountMinor":"50000"', '"amountMinor":1e3'), headers: { 'content-type': 'application/json' } });
  t.deepEqual(json.body.error.issues.map((i: any) => `${i.path}:${i.code}`), ['policies.0.rules.0.amountMinor:AMOUNT_NOT_INTEGER']);
  // A value that is an integer but not positive is AMOUNT_NOT_POSITIVE, as for a purchase.
  const zero = await app.admin('/admin/manifests', { raw: text.replace('amountMinor: "50000"', 'amountMinor: 0'), headers: { 'content-type': 'application/yaml' } });
  t.deepEqual(zero.body.error.issues.map((i: any) => `${i.path}:${i.code}`), ['policies.0.rules.0.amountMinor:AMOUNT_NOT_POSITIVE']);
  t.deepEqual(await counts(), before);
  // Integers, signed or quoted, are limits.
  const ok = await app.admin('/admin/manifests', { raw: text.replace('amountMinor: "50000"', 'amountMinor: +50000'), headers: { 'content-type': 'application/yaml' } });
  t.is(ok.status, 200, ok.text);
});

test.serial('a name given twice in a YAML mapping is DUPLICATE_KEY at its path, as in JSON, and nothing is written', async (t) => {
  const before = await counts();
  const yaml = stringify(acmeManifest('yaml-twice')).replace('amountMinor: "20000"', 'amountMinor: "20000"\n        amountMinor: "2"');
  t.regex(yaml, /amountMinor: "2"\n/);
  const asYaml = await app.admin('/admin/manifests', { raw: yaml, headers: { 'content-type': 'application/yaml' } });
  const json = JSON.stringify(acmeManifest('yaml-twice')).replace('"amountMinor":"20000"', '"amountMinor":"20000","amountMinor":"2"');
  const asJson = await app.admin('/admin/manifests', { raw: json, headers: { 'content-type': 'application/json' } });
  for (const res of [asYaml, asJson]) {
    t.is(res.status, 400, res.text);
    t.deepEqual(res.body.error.issues, [{ path: 'policies.0.rules.1.amountMinor', code: 'DUPLICATE_KEY', message: '"policies.0.rules.1.amountMinor" is given twice; give each field once.' }]);
  }
  const top = await app.admin('/admin/manifests', { raw: 'organization: {handle: a}\norganization: {handle: b}\n', headers: { 'content-type': 'application/yaml' } });
  t.deepEqual(top.body.error.issues.map((i: any) => `${i.path}:${i.code}`), ['organization:DUPLICATE_KEY']);
  // The name given the second time through an alias (`*n` stands for the key anchored `&n name`): it would silently replace the first.
  const aliased = stringify(acmeManifest('yaml-alias')).replace('name: Acme Robotics', '&n name: Acme Robotics\n  *n : Someone Else');
  t.regex(aliased, /\*n : Someone Else\n/);
  const alias = await app.admin('/admin/manifests', { raw: aliased, headers: { 'content-type': 'application/yaml' } });
  t.is(alias.status, 400, alias.text);
  t.deepEqual(alias.body.error.issues, [{ path: 'organization.name', code: 'DUPLICATE_KEY', message: '"organization.name" is given twice; give each field once.' }]);
  t.deepEqual(await counts(), before);
});

test('a manifest may be YAML', async (t) => {
  const res = await app.admin('/admin/manifests', { raw: stringify(acmeManifest('yaml-org')), headers: { 'content-type': 'application/yaml' } });
  t.is(res.status, 200);
  t.is(res.body.organization.handle, 'yaml-org');
  t.truthy(res.body.apiKeys['buyer-key'].key);
});

test('operator bodies: 415 for other media types, 400 malformed_json, 413 over the limit', async (t) => {
  const wrongType = await app.admin('/admin/manifests', { raw: '{}', headers: { 'content-type': 'text/plain' } });
  t.is(wrongType.status, 415);
  t.is(wrongType.body.error.code, 'unsupported_media_type');
  const broken = await app.admin('/admin/manifests', { raw: '{"organization": ', headers: { 'content-type': 'application/json' } });
  t.is(broken.status, 400);
  t.is(broken.body.error.code, 'malformed_json');
  const huge = await app.admin('/admin/manifests', { raw: JSON.stringify({ pad: 'x'.repeat(1100 * 1024) }), headers: { 'content-type': 'application/json' } });
  t.is(huge.status, 413);
  t.is(huge.body.error.code, 'payload_too_large');
});

test('a manifest nested deeper than the body limit is refused in one clear 400, YAML or JSON, however deep', async (t) => {
  // A megabyte of '[' (just under the manifest limit) held the event loop for about 26 s as YAML and
  // 2 s as JSON. The answer is the refusal a too-deep client body gets, naming the manifest's syntax.
  const brackets = '['.repeat(MANIFEST_LIMIT - 1);
  const cases = [
    { name: 'YAML, a megabyte of [', raw: brackets, type: 'application/yaml', says: /^YAML mappings and sequences nest at most 32 levels deep\.$/ },
    { name: 'YAML, a megabyte of {', raw: '{'.repeat(MANIFEST_LIMIT - 1), type: 'application/yaml', says: /^YAML mappings/ },
    { name: 'YAML, compact sequences (- - - …)', raw: '- '.repeat(MANIFEST_LIMIT / 2 - 2) + 'x\n', type: 'application/yaml', says: /^YAML mappings/ },
    { name: 'YAML, 1,000 levels of indentation', raw: Array.from({ length: 1000 }, (_, i) => ' '.repeat(i) + 'k:').join('\n') + ' 1\n', type: 'application/yaml', says: /^YAML mappings/ },
    { name: 'YAML, 33 levels (just over)', raw: stringify(nested(33)), type: 'application/yaml', says: /^YAML mappings/ },
    { name: 'JSON, a megabyte of [', raw: brackets, type: 'application/json', says: /^JSON objects and arrays nest at most 32 levels deep\.$/ },
    { name: 'JSON, 33 levels (just over)', raw: JSON.stringify(nested(33)), type: 'application/json', says: /^JSON objects/ },
  ];
  for (const c of cases) {
    const started = performance.now();
    const res = await app.admin('/admin/manifests', { raw: c.raw, headers: { 'content-type': c.type } });
    t.log(`${c.name}: ${res.status} in ${Math.round(performance.now() - started)} ms`);
    t.is(res.status, 400, c.name);
    t.is(res.body.error.code, 'invalid_request', c.name);
    t.is(res.body.error.issues.length, 1, c.name);
    t.like(res.body.error.issues[0], { path: 'body', code: 'TOO_DEEP' }, c.name);
    t.regex(res.body.error.issues[0].message, c.says, c.name);
  }
  // 32 levels are allowed through to the manifest's own checks (which then find no organisation).
  for (const [raw, type] of [[stringify(nested(32)), 'application/yaml'], [JSON.stringify(nested(32)), 'application/json']]) {
    const res = await app.admin('/admin/manifests', { raw, headers: { 'content-type': type } });
    t.is(res.status, 400);
    t.false(res.body.error.issues?.some((i: { code: string }) => i.code === 'TOO_DEEP'), res.text.slice(0, 300));
  }
});

test('`npm start -- --manifest FILE` refuses a too-deep manifest with the same message, and does not start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'spend-control-manifest-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'deep.yaml');
  writeFileSync(file, '['.repeat(MANIFEST_LIMIT - 1));
  const { code, stdout, stderr } = await runService({ DATA_DIR: ':memory:' }, ['--manifest', file]);
  t.is(code, 2, stderr);
  t.regex(stderr, /refused \(invalid_request\).*\n\s+body: TOO_DEEP: YAML mappings and sequences nest at most 32 levels deep\./);
  t.notRegex(stdout, /listening/);
});

test('`npm start -- --manifest FILE` refuses a manifest that is not UTF-8, as the operator API does, and does not start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'spend-control-manifest-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'latin1.yaml');
  // "Café" in Latin-1: read as UTF-8 with replacement, the name would be stored as "Caf\uFFFD".
  writeFileSync(file, Buffer.concat([Buffer.from('organization: {handle: latin1, name: "Caf'), Buffer.from([0xe9]), Buffer.from('", currency: EUR, timezone: UTC}\n')]));
  const { code, stdout, stderr } = await runService({ DATA_DIR: ':memory:' }, ['--manifest', file]);
  t.is(code, 2, stderr);
  t.regex(stderr, /refused \(malformed_json\): The manifest is not valid UTF-8\./);
  t.notRegex(stdout, /listening/);
});

test('changing an agent’s status records agent.disabled and agent.archived events', async (t) => {
  const org = await applyManifest(app, acmeManifest('events'));
  const agentId = org.agents.buyer.id;
  const disabled = await app.admin(`/admin/agents/${agentId}`, { method: 'PATCH', body: { status: 'DISABLED' } });
  t.is(disabled.status, 200);
  t.is(disabled.body.agent.status, 'DISABLED');
  const archived = await app.admin(`/admin/agents/${agentId}`, { method: 'PATCH', body: { status: 'ARCHIVED' } });
  t.is(archived.body.agent.status, 'ARCHIVED');
  const events = await app.store.db.collection('events').find({ organizationId: org.organizationId }).sort({ _id: 1 }).toArray();
  t.deepEqual(events.map((e: any) => e.type), ['agent.disabled', 'agent.archived']);
  t.is(events[0].data.agentId, agentId);
  const list = await app.request('/v1/agents', { key: org.keys['admin-key'] });
  t.is(list.body.agents.find((a: any) => a.id === agentId).status, 'ARCHIVED');

  const bad = await app.admin(`/admin/agents/${agentId}`, { method: 'PATCH', body: { status: 'ASLEEP' } });
  t.is(bad.status, 400);
  t.is(bad.body.error.code, 'invalid_request');
  const unknown = await app.admin('/admin/agents/0190aaaa-0000-7000-8000-000000000000', { method: 'PATCH', body: { status: 'ENABLED' } });
  t.is(unknown.status, 404);
  const noType = await app.admin(`/admin/agents/${agentId}`, { method: 'PATCH', raw: '{"status":"ENABLED"}' });
  t.is(noType.status, 415);
});
