// The operator CLI: `npm run admin -- <command> ...`, a thin client of the /admin API.
// Reads SERVICE_URL (default http://localhost:3000) and ADMIN_TOKEN from the environment.
// `backup` and `mongo-url` are the exceptions: they read the embedded store's files in DATA_DIR directly;
// and so are the receipt commands (docs/operate/auditors.md), which open the store the service uses
// (MONGODB_URI, else DATA_DIR) so that an auditor's check does not rest on the service's answers.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config.ts';
import { rotateMongoUrl } from '../src/store/wire/embedded-listener.ts';
import { backupDatabase } from '../src/store/embedded/backup.ts';
import { EmbeddedStore } from '../src/store/embedded/embedded-store.ts';
import { openStore } from '../src/store/open-store.ts';
import type { Store } from '../src/store/store.ts';
import { adoptableKeys, adoptSigningKeys, createSigningKey, hasSealedSigningKey, sealingKey, sealOpensNewestKey } from '../src/receipts/keys.ts';
import { exportLog, verifyLog } from '../src/receipts/audit.ts';
import { parseSeqOption, SEQ_OPTION_MISTAKE } from '../src/receipts/verify.ts';

const USAGE = `Usage: npm run admin -- <command> [arguments]

  apply <manifest.yaml|manifest.json>          apply an organisation manifest (keys are printed once)
  answer <purchaseRequestId> approve|reject --person <handle> [--comment <text>]
                                               prints {purchase}, and the decision's signed "receipt"
                                               when the answer decided (not below a quorum)
  purchase <purchaseRequestId>                 a purchase as its agent reads it, with its approval's answers so far
  agent-status <agentId> ENABLED|DISABLED|ARCHIVED
  org-status <organizationId> ACTIVE|SUSPENDED
  revoke-key <apiKeyId>
  shadow <policyVersionId> on|off              put a DRAFT version in shadow beside live decisions, or stop it
  set-password <personId>                      reads the new password from standard input; ends the person's
                                               dashboard sessions and assistant connections
  remove-password <personId>                   no sign-in for the person (one who left: a manifest deletes
                                               nobody); ends their sessions and assistant connections
  connections <organizationId>                 list connections
  revoke-connection <connectionId>
  oauth-clients                                list clients registered through Dynamic Client Registration
  revoke-oauth-client <id|clientId URL>        revoke a registered client and every connection made with it
  mongo-url [--analyst]                        a new password for the wire-protocol listener's service
                                               (or analyst) user, printed once in its connection string
  backup <file>                                copy the embedded store's live database to a new file
                                               (run on the service's machine; reads DATA_DIR, default ./data)
  rotate-signing-key                           a new key signs decision receipts from now on; the old
                                               public keys stay in /.well-known/jwks.json
  adopt-signing-keys [<kid>...]                without a kid, list the stored signing keys the encryption key
                                               did not seal (made before it was set); with kids, publish
                                               those again in /.well-known/jwks.json, verify-only
  export-log <organizationId> [--from <seq>]   the organisation's receipts as JSON Lines {"seq","receipt"}
  verify-log <organizationId>                  check the stored receipt chain against the stored decisions;
                                               exits 1 naming the first bad seq

Environment: SERVICE_URL (default http://localhost:3000), ADMIN_TOKEN (required);
mongo-url and backup run on the service's machine and read DATA_DIR (mongo-url also EMBEDDED_MONGO_PORT and
EMBEDDED_MONGO_HOST) instead; rotate-signing-key, adopt-signing-keys, export-log and verify-log open the service's store
(MONGODB_URI, else DATA_DIR; all but export-log also WEBHOOK_ENCRYPTION_KEY, which seals the keys).`;

type Call = { method: string; path: string; body?: string | Buffer; contentType?: string };

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** parseArgs, with an unknown or malformed option as a usage mistake. */
function parse<T extends Parameters<typeof parseArgs>[0]>(config: T) {
  try {
    return parseArgs(config);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

export async function buildCall(argv: string[]): Promise<Call> {
  const { values, positionals } = parse({ args: argv, allowPositionals: true, options: { person: { type: 'string' }, comment: { type: 'string' } } });
  const [command, a, b] = positionals;
  const json = (body: unknown) => JSON.stringify(body);
  switch (command) {
    case 'apply': {
      if (!a) break;
      // The bytes as they are: the service refuses text that is not UTF-8 rather than store it with characters replaced.
      const bytes = await readFile(a).catch((err: NodeJS.ErrnoException) => {
        throw new UsageError(`cannot read ${a}: ${err.code ?? err.message}`);
      });
      return { method: 'POST', path: '/admin/manifests', body: bytes, contentType: /\.json$/i.test(a) ? 'application/json' : 'application/yaml' };
    }
    case 'answer': {
      if (!a || !b || !values.person) break;
      const answer = b.toUpperCase() === 'APPROVE' ? 'APPROVE' : b.toUpperCase() === 'REJECT' ? 'REJECT' : null;
      if (!answer) break;
      return { method: 'POST', path: `/admin/purchase-requests/${encodeURIComponent(a)}/answer`, body: json({ answer, person: values.person, comment: values.comment ?? null }) };
    }
    case 'purchase':
      if (a) return { method: 'GET', path: `/admin/purchase-requests/${encodeURIComponent(a)}` };
      break;
    case 'agent-status':
      if (a && b) return { method: 'PATCH', path: `/admin/agents/${encodeURIComponent(a)}`, body: json({ status: b.toUpperCase() }) };
      break;
    case 'org-status':
      if (a && b) return { method: 'PATCH', path: `/admin/organizations/${encodeURIComponent(a)}`, body: json({ status: b.toUpperCase() }) };
      break;
    case 'shadow': {
      const on = b?.toLowerCase() === 'on' ? true : b?.toLowerCase() === 'off' ? false : null;
      if (a && on !== null) return { method: 'PATCH', path: `/admin/policy-versions/${encodeURIComponent(a)}`, body: json({ shadow: on }) };
      break;
    }
    case 'revoke-key':
      if (a) return { method: 'DELETE', path: `/admin/api-keys/${encodeURIComponent(a)}` };
      break;
    case 'set-password':
      if (a) return { method: 'PUT', path: `/admin/people/${encodeURIComponent(a)}/password`, body: json({ password: await readStdin() }) };
      break;
    case 'remove-password':
      if (a) return { method: 'DELETE', path: `/admin/people/${encodeURIComponent(a)}/password` };
      break;
    case 'connections':
      if (a) return { method: 'GET', path: `/admin/connections?organizationId=${encodeURIComponent(a)}` };
      break;
    case 'revoke-connection':
      if (a) return { method: 'DELETE', path: `/admin/connections/${encodeURIComponent(a)}` };
      break;
    case 'oauth-clients':
      return { method: 'GET', path: '/admin/oauth-clients' };
    case 'revoke-oauth-client':
      // The id, or the whole client_id URL as it appears in connection listings.
      if (a) return { method: 'DELETE', path: `/admin/oauth-clients/${encodeURIComponent(a.split('/').at(-1)!)}` };
      break;
    case undefined:
      throw new UsageError('no command given');
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
  throw new UsageError(`${command}: missing or wrong arguments`);
}

class UsageError extends Error {}

function usageMistake(err: unknown): never {
  process.stderr.write((err instanceof Error && err.message ? err.message + '\n\n' : '') + USAGE + '\n');
  process.exit(2);
}

function backup(file: string | undefined): never {
  if (!file || process.argv.length > 4) usageMistake(new UsageError('backup: name one file to write'));
  try {
    const { source, target } = backupDatabase(process.env.DATA_DIR || './data', file);
    process.stdout.write(`Backed up ${source} to ${target}\n`);
    process.exit(0);
  } catch (err) {
    process.stderr.write(`backup failed: ${(err as Error).message}\n`);
    process.exit(1);
  }
}

const KEY_COMMANDS = new Set(['rotate-signing-key', 'adopt-signing-keys']);
const RECEIPT_COMMANDS = new Set([...KEY_COMMANDS, 'export-log', 'verify-log']);

async function withStore<T>(work: (store: Store, config: ReturnType<typeof loadConfig>) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const store = await openStore({ mongodbUri: config.mongodbUri ?? undefined, dbName: config.mongodbDb ?? undefined, timeoutMs: config.mongodbTimeoutMs, dataDir: config.dataDir, synchronous: config.sqliteSynchronous });
  try {
    return await work(store, config);
  } finally {
    await store.close();
  }
}

/** The key that seals the signing keys is the service's: WEBHOOK_ENCRYPTION_KEY, or the one the embedded store generated. */
async function serviceEncryptionKey(store: Store, config: ReturnType<typeof loadConfig>): Promise<string | null> {
  if (config.webhookEncryptionKey !== null || !(store instanceof EmbeddedStore)) return config.webhookEncryptionKey;
  return (await store.secret('webhook-encryption-key', () => randomBytes(32).toString('hex'))).value;
}

/** rotate-signing-key, adopt-signing-keys, export-log, verify-log (docs/operate/auditors.md). Exits: 0 done, 1 a bad chain, 2 a usage mistake. */
async function receiptCommand(command: string, rest: string[]): Promise<never> {
  let values: { from?: string };
  let positionals: string[];
  try {
    ({ values, positionals } = parse({ args: rest, allowPositionals: true, options: { from: { type: 'string' } } }));
  } catch (err) {
    usageMistake(err);
  }
  const from = values.from === undefined ? 1 : parseSeqOption(values.from);
  const usable =
    command === 'adopt-signing-keys'
      ? values.from === undefined
      : command === 'rotate-signing-key'
        ? positionals.length === 0 && values.from === undefined
        : positionals.length === 1 && (command === 'export-log' || values.from === undefined);
  if (!usable) usageMistake(new UsageError(`${command}: missing or wrong arguments`));
  if (from === null) usageMistake(new UsageError(SEQ_OPTION_MISTAKE(values.from!)));
  const code = await withStore(async (store, config) => {
    // An id the store does not hold (an organisation's handle, a typo) would export nothing and verify
    // as an empty, sound chain: refused instead. Ids are lower-case UUIDs; one in capitals is the same.
    let organizationId = positionals[0];
    if (!KEY_COMMANDS.has(command)) {
      const organizations = store.db.collection<{ _id: string }>('organizations');
      const found = (await organizations.findOne({ _id: organizationId }, { projection: { _id: 1 } })) ?? (await organizations.findOne({ _id: organizationId.toLowerCase() }, { projection: { _id: 1 } }));
      if (!found) {
        process.stderr.write(`${command}: no organisation ${organizationId} in the store (give its id, not its handle)\n`);
        return 2;
      }
      organizationId = found._id;
    }
    switch (command) {
      case 'rotate-signing-key': {
        if (config.decisionSigningKey !== null) {
          process.stderr.write('rotate-signing-key: the signing key is the one DECISION_SIGNING_KEY gives: to rotate it, give a new key there and restart the service; the old public key stays in /.well-known/jwks.json.\n');
          return 1;
        }
        const seal = sealingKey(await serviceEncryptionKey(store, config));
        if (!(await sealOpensNewestKey(store.db, seal))) {
          process.stderr.write("rotate-signing-key: the newest signing key is sealed with another encryption key than this command has: run it with the service's WEBHOOK_ENCRYPTION_KEY, or the service would go on signing with the old key.\n");
          return 2;
        }
        const kid = await createSigningKey(store, seal);
        process.stdout.write(`New signing key ${kid}: it signs every decision from now on; earlier keys stay in /.well-known/jwks.json.\n`);
        return 0;
      }
      case 'adopt-signing-keys':
        return adopt(store, config, positionals);
      case 'export-log':
        for await (const line of exportLog(store.db, organizationId, from)) process.stdout.write(line + '\n');
        return 0;
      default: {
        const warn = (msg: string, fields?: Record<string, unknown>) => process.stderr.write(`verify-log: ${msg} ${JSON.stringify(fields)}\n`);
        const verdict = await verifyLog(store.db, organizationId, { webhookEncryptionKey: await serviceEncryptionKey(store, config) }, { warn });
        if (verdict.ok) {
          process.stdout.write(`verify-log: ${organizationId}: ${verdict.count} receipt(s), seq 1..${verdict.count}, signatures, chain and stored decisions agree; head ${verdict.head ?? '(none)'}\n`);
          return 0;
        }
        process.stderr.write(`verify-log: ${organizationId}: seq ${verdict.seq} is bad: ${verdict.reason}\n`);
        return 1;
      }
    }
  });
  process.exit(code);
}

/**
 * adopt-signing-keys (docs/operate/auditors.md#keys-stored-before-the-encryption-key): lists, or publishes again
 * verify-only, the stored keys the service's encryption key did not seal. Exits 0 done, 2 refused.
 */
async function adopt(store: Store, config: ReturnType<typeof loadConfig>, kids: string[]): Promise<number> {
  const seal = sealingKey(await serviceEncryptionKey(store, config));
  if (seal === null) {
    process.stderr.write('adopt-signing-keys: no WEBHOOK_ENCRYPTION_KEY: without one every stored key is published already; run it with the one the service has.\n');
    return 2;
  }
  if (kids.length === 0) {
    const keys = await adoptableKeys(store.db, seal);
    for (const k of keys) process.stdout.write(`${k.kid}  created ${k.createdAt instanceof Date ? k.createdAt.toISOString() : '?'}  ${k.reason}\n`);
    process.stdout.write(keys.length === 0 ? 'adopt-signing-keys: every stored key is sealed with this encryption key.\n' : 'adopt-signing-keys: name those that are the deployment\'s own (the kid of its receipts: export-log) to publish them again.\n');
    return 0;
  }
  // A process still running without the encryption key signs with an unsealed key: adopted, it could sign no more.
  if (config.decisionSigningKey === null && !(await hasSealedSigningKey(store.db, seal))) {
    process.stderr.write('adopt-signing-keys: no signing key is sealed with this encryption key yet: start every process of the service with this WEBHOOK_ENCRYPTION_KEY first (it makes one), then adopt; a process still running without it would be left with no key to sign with.\n');
    return 2;
  }
  const unknown = await adoptSigningKeys(store, seal, kids);
  if (unknown.length > 0) {
    process.stderr.write(`adopt-signing-keys: not a stored key this encryption key refuses: ${unknown.join(', ')}; nothing adopted (list them: adopt-signing-keys without a kid).\n`);
    return 2;
  }
  process.stdout.write(`Adopted ${kids.join(', ')}: published in /.well-known/jwks.json again, verify-only; their receipts verify.\n`);
  return 0;
}

async function main() {
  if (process.argv[2] === 'backup') backup(process.argv[3]);
  if (RECEIPT_COMMANDS.has(process.argv[2])) await receiptCommand(process.argv[2], process.argv.slice(3));
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  if (command === 'mongo-url') {
    let values: { analyst?: boolean };
    try {
      ({ values } = parse({ args: rest, options: { analyst: { type: 'boolean' } } }));
    } catch (err) {
      usageMistake(err);
    }
    try {
      process.stdout.write(rotateMongoUrl(loadConfig(), values.analyst === true) + '\n');
      process.exit(0);
    } catch (err) {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exit(2);
    }
  }
  const token = process.env.ADMIN_TOKEN;
  const base = (process.env.SERVICE_URL || 'http://localhost:3000').replace(/\/+$/, '');
  let call: Call;
  try {
    call = await buildCall(process.argv.slice(2));
  } catch (err) {
    if (err instanceof UsageError) usageMistake(err);
    throw err;
  }
  if (!token) {
    process.stderr.write('ADMIN_TOKEN is not set (the embedded default prints one at start).\n');
    process.exit(2);
  }
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (call.body !== undefined) headers['content-type'] = call.contentType ?? 'application/json';
  const res = await fetch(base + call.path, { method: call.method, headers, body: call.body }).catch((err: Error & { cause?: { code?: string; message?: string } }) => {
    process.stderr.write(`cannot reach the service at ${base} (${err.cause?.code ?? err.cause?.message ?? err.message}): set SERVICE_URL to its address (with PORT=N, http://localhost:N)\n`);
    process.exit(1);
  });
  const text = await res.text();
  // A decision's receipt (an answer that decided) comes as the Decision-Receipt header: printed in the
  // same JSON, as "receipt", so that stdout stays one document (docs/operate/cli.md).
  const receipt = res.headers.get('decision-receipt');
  let out = text;
  try {
    const parsed: unknown = JSON.parse(text);
    const withReceipt = receipt !== null && parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? { ...parsed, receipt } : parsed;
    out = JSON.stringify(withReceipt, null, 2);
  } catch {
    // not JSON: print as is
  }
  (res.ok ? process.stdout : process.stderr).write(out + '\n');
  process.exit(res.ok ? 0 : 1);
}

if (import.meta.main) await main();
