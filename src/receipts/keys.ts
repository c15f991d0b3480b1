// The deployment's Ed25519 signing keys (docs/integrate/receipts.md): generated on first start (or when
// the newest cannot be opened any more), the private half sealed in the store with the key that seals
// webhook secrets (WEBHOOK_ENCRYPTION_KEY, generated on the embedded store: src/bootstrap.ts). The
// newest key signs; every key's public half stays in the JWKS, so that old receipts keep verifying,
// but a key the encryption key did not seal (written straight into the store) neither signs nor is published,
// unless the operator adopts it (`npm run admin -- adopt-signing-keys`: keys stored before the encryption key).
// `npm run admin -- rotate-signing-key` adds a newer one and bumps the configuration stamp, so that
// every process signs with it from its next decision (src/cache/config-cache.ts).
// Or the operator gives the key (DECISION_SIGNING_KEY): it then signs, and only its public half is
// stored, so that the JWKS keeps publishing it after it is replaced.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { isDuplicateKeyError } from '../store/store.ts';
import { bumpConfigStamp, configView, viewIn } from '../cache/config-cache.ts';
import { runCommand } from '../commands/run-command.ts';
import type { Store, StoreDb, StoreSession } from '../store/store.ts';
import type { Logger } from '../log.ts';
import { decryptSecret, encryptSecret, parseEncryptionKey } from '../webhooks/secrets.ts';
import type { ReceiptKey } from './chain.ts';
import { receiptCollections, type SigningKeyDoc } from './documents.ts';
import type { PublicJwk } from './verify.ts';

const PLAIN = 'plain.';
/** The private half of a key given by DECISION_SIGNING_KEY is never stored. */
const CONFIGURED = 'configured';

/** Where the signing key comes from: the configuration's own, else one sealed with the encryption key. */
export interface KeySettings {
  webhookEncryptionKey: string | null;
  decisionSigningKey: string | null;
}

interface ConfiguredKey {
  kid: string;
  privateKey: KeyObject;
  x: string;
}

const configured = new Map<string, ConfiguredKey>();

/**
 * The stored keys, the one that signs now first: a configured key the operator returned to moves up again
 * (`since`). A key stored before `since` existed counts from its `createdAt`, as it did then.
 */
async function keyDocsNewestFirst(db: StoreDb, session?: StoreSession): Promise<SigningKeyDoc[]> {
  const docs = await receiptCollections(db).keys.find({}, { session }).toArray();
  // A document without either (none the service writes) sorts last, and is judged by openKey like any other.
  const at = (d: SigningKeyDoc) => {
    const t: unknown = d.since ?? d.createdAt;
    return t instanceof Date ? t.getTime() : -Infinity;
  };
  return docs.sort((a, b) => at(b) - at(a) || (a._id < b._id ? 1 : a._id > b._id ? -1 : 0));
}

/** The key DECISION_SIGNING_KEY gives (checked at start: src/config.ts), or null. */
function configuredKey(settings: KeySettings): ConfiguredKey | null {
  const pem = settings.decisionSigningKey;
  if (pem === null) return null;
  let key = configured.get(pem);
  if (key === undefined) {
    const privateKey = createPrivateKey({ key: pem, format: 'pem' });
    const { x } = createPublicKey(privateKey).export({ format: 'jwk' }) as { x: string };
    configured.set(pem, (key = { kid: thumbprint(x), privateKey, x }));
  }
  return key;
}

/** The AES key that seals private keys, or null (stored unsealed: docs/reference/decisions.md). */
export function sealingKey(rawEncryptionKey: string | null): Buffer | null {
  if (rawEncryptionKey === null) return null;
  try {
    return parseEncryptionKey(rawEncryptionKey);
  } catch {
    return null;
  }
}

/**
 * Names the encryption key, without holding it, in what this process remembers of the keys opened with it:
 * services in one process on one store may have different ones (tests build several), and one's JWKS or
 * signing key is not another's.
 */
const sealTag = (rawEncryptionKey: string | null): string =>
  rawEncryptionKey === null ? 'unsealed' : createHash('sha256').update(rawEncryptionKey).digest('base64url');

/** RFC 7638 thumbprint of an Ed25519 public key (RFC 8037 §2). */
export const thumbprint = (x: string): string => createHash('sha256').update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x })).digest('base64url');

/** A key the deployment vouches for: its private half, or null when it holds only the public half. */
interface StoredKey {
  kid: string;
  x: string;
  privateKey: KeyObject | null;
}

const sealedPublicHalf = (seal: Buffer, key: { kid: string; x: string }) => `${CONFIGURED}.${encryptSecret(seal, key.x, `public:${key.kid}`)}`;

/**
 * The key a stored document holds, when this deployment vouches for it; throws saying why not. With an
 * encryption key, only what it sealed is the deployment's: whoever can write to the store could
 * otherwise plant a key of their choosing (an unsealed private half, or a bare public half), which
 * would sign or be published (docs/reference/decisions.md). Without one nothing can be told apart.
 */
function openKey(doc: SigningKeyDoc, seal: Buffer | null): StoredKey {
  const x = doc.publicJwk?.x;
  if (typeof x !== 'string' || thumbprint(x) !== doc._id) throw new Error('its id is not the thumbprint of its public key');
  const stored = typeof doc.privateKey === 'string' ? doc.privateKey : '';
  if (stored === CONFIGURED || stored.startsWith(`${CONFIGURED}.`)) {
    if (seal !== null && (stored === CONFIGURED || !opens(() => decryptSecret(seal, stored.slice(CONFIGURED.length + 1), `public:${doc._id}`) === x))) {
      throw new Error('its public half is not sealed with this deployment\'s encryption key');
    }
    return { kid: doc._id, x, privateKey: null };
  }
  let der: string;
  if (stored.startsWith(PLAIN)) {
    if (seal !== null) throw new Error('its private half is not sealed, and this deployment seals its keys');
    der = stored.slice(PLAIN.length);
  } else {
    // Sealed under a key this process does not have: published, and passed over for signing.
    if (seal === null) return { kid: doc._id, x, privateKey: null };
    try {
      der = decryptSecret(seal, stored, doc._id);
    } catch {
      throw new Error('its private half is not sealed with this deployment\'s encryption key');
    }
  }
  const privateKey = createPrivateKey({ key: Buffer.from(der, 'base64url'), format: 'der', type: 'pkcs8' });
  if ((createPublicKey(privateKey).export({ format: 'jwk' }) as { x?: string }).x !== x) throw new Error('its private half is not that of its public key');
  return { kid: doc._id, x, privateKey };
}

const opens = (check: () => boolean): boolean => {
  try {
    return check();
  } catch {
    return false;
  }
};

const refusalsLogged = new Set<string>();

/** The stored keys the deployment vouches for, newest first; each refused one is logged once per process. */
async function storedKeys(db: StoreDb, seal: Buffer | null, log?: Pick<Logger, 'warn'>, session?: StoreSession): Promise<StoredKey[]> {
  const docs = await keyDocsNewestFirst(db, session);
  const keys: StoredKey[] = [];
  for (const doc of docs) {
    try {
      keys.push(openKey(doc, seal));
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (log && !refusalsLogged.has(`${doc._id}:${reason}`)) {
        refusalsLogged.add(`${doc._id}:${reason}`);
        log.warn('signing key refused: it neither signs nor is published in the JWKS', { kid: doc._id, reason, ...(adoptable(doc) ? { ifOwn: ADOPT_HINT } : {}) });
      }
    }
  }
  return keys;
}

const ADOPT_HINT = "if it is the deployment's own (stored before this encryption key), npm run admin -- adopt-signing-keys publishes it again: docs/operate/auditors.md#keys-stored-before-the-encryption-key";

/** Whether a refused key could be adopted: its id is the thumbprint of the public half it stores. */
const adoptable = (doc: SigningKeyDoc) => typeof doc.publicJwk?.x === 'string' && thumbprint(doc.publicJwk.x) === doc._id;

/** A stored key the deployment's encryption key did not seal, and why it is refused. */
export interface AdoptableKey {
  kid: string;
  x: string;
  createdAt: unknown;
  reason: string;
}

/**
 * The stored keys `seal` refuses for how they are stored (unsealed, or sealed under another encryption
 * key), newest first: those adopt-signing-keys can publish again.
 */
export async function adoptableKeys(db: StoreDb, seal: Buffer, session?: StoreSession): Promise<AdoptableKey[]> {
  const refused: AdoptableKey[] = [];
  for (const doc of await keyDocsNewestFirst(db, session)) {
    if (!adoptable(doc)) continue;
    try {
      openKey(doc, seal);
    } catch (err) {
      refused.push({ kid: doc._id, x: doc.publicJwk.x, createdAt: doc.createdAt, reason: err instanceof Error ? err.message : String(err) });
    }
  }
  return refused;
}

/** Whether a process with `seal` has a stored key to sign with: one sealed with it (the service started with it). */
export async function hasSealedSigningKey(db: StoreDb, seal: Buffer): Promise<boolean> {
  return (await storedKeys(db, seal)).some((k) => k.privateKey !== null);
}

/**
 * The operator vouches for keys stored before `seal` sealed the deployment's (on MongoDB without
 * WEBHOOK_ENCRYPTION_KEY, or under an earlier one): each named key's public half is sealed with it, so
 * that the JWKS publishes it again and its receipts verify, and its private half is erased, so that it
 * never signs again (unsealed, it lay readable in the store; sealed under another key, none here opens
 * it). Not automatic: a key planted in the store looks the same (docs/reference/decisions.md). Returns
 * the kids named that are not such keys, adopting none then.
 */
export async function adoptSigningKeys(store: Store, seal: Buffer, kids: string[]): Promise<string[]> {
  return runCommand(store, async (session) => {
    const candidates = new Map((await adoptableKeys(store.db, seal, session)).map((k) => [k.kid, k]));
    const unknown = kids.filter((kid) => !candidates.has(kid));
    if (unknown.length > 0) return unknown;
    for (const kid of new Set(kids)) {
      await receiptCollections(store.db).keys.updateOne({ _id: kid }, { $set: { privateKey: sealedPublicHalf(seal, candidates.get(kid)!) } }, { session });
    }
    await bumpConfigStamp(store.db, session);
    return [];
  });
}

/**
 * Makes a new signing key and stores it: from now on the newest, so the one that signs. The key and the
 * configuration stamp's bump are one transaction: a process dying between the two would leave the
 * other processes publishing a JWKS without the key that signs.
 */
export async function createSigningKey(store: Store, seal: Buffer | null, now = new Date()): Promise<string> {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  const kid = thumbprint(x);
  const der = (privateKey.export({ format: 'der', type: 'pkcs8' }) as Buffer).toString('base64url');
  const doc: SigningKeyDoc = {
    _id: kid,
    publicJwk: { kty: 'OKP', crv: 'Ed25519', x },
    privateKey: seal === null ? PLAIN + der : encryptSecret(seal, der, kid),
    createdAt: now,
    since: now,
  };
  await runCommand(store, async (session) => {
    await receiptCollections(store.db).keys.insertOne(doc, { session });
    await bumpConfigStamp(store.db, session);
  });
  return kid;
}

/**
 * Whether a key sealed with `seal` is one the service can open: the newest stored private half opens
 * with it, as the service would take it (or there is none). rotate-signing-key runs with its own
 * environment; without the service's WEBHOOK_ENCRYPTION_KEY it would add a key the service passes over.
 */
export async function sealOpensNewestKey(db: StoreDb, seal: Buffer | null): Promise<boolean> {
  const docs = await keyDocsNewestFirst(db);
  const newest = docs.find((d) => typeof d.privateKey !== 'string' || !d.privateKey.startsWith(CONFIGURED));
  return newest === undefined || opens(() => openKey(newest, seal).privateKey !== null);
}

/**
 * The configured key's public half in the JWKS, first while it signs and kept there once it is replaced;
 * sealed with the encryption key when there is one, so that a public half planted in the store is not
 * published. A key the operator returns to is first again.
 */
async function publishConfiguredKey(store: Store, key: ConfiguredKey, seal: Buffer | null): Promise<void> {
  const { db } = store;
  const keys = receiptCollections(db).keys;
  const privateKey = seal === null ? CONFIGURED : sealedPublicHalf(seal, key);
  try {
    await runCommand(store, async (session) => {
      const [current] = await storedKeys(db, seal, undefined, session);
      if (current?.kid === key.kid) return;
      const now = new Date();
      // The document of this kid, if any, is this key's (its id is the thumbprint of the public half we hold).
      const { matchedCount } = await keys.updateOne({ _id: key.kid }, { $set: { publicJwk: { kty: 'OKP', crv: 'Ed25519', x: key.x }, privateKey, since: now } }, { session });
      if (matchedCount === 0) await keys.insertOne({ _id: key.kid, publicJwk: { kty: 'OKP', crv: 'Ed25519', x: key.x }, privateKey, createdAt: now, since: now }, { session });
      await bumpConfigStamp(db, session);
    });
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err; // another process published it first
  }
}

// Per store, configured key and encryption key: a test may run services with different keys on one store.
const ensured = new WeakMap<StoreDb, Map<string, Promise<void>>>();

/**
 * Makes sure a usable signing key exists: one is made when there is none, or when the newest cannot be
 * opened with this deployment's encryption key (it changed). Once per process and store; called at
 * start and before a command that signs. Two processes starting at once may each make one: both stay
 * in the JWKS, and the newest signs.
 */
export function ensureSigningKey(store: Store, settings: KeySettings, log?: Pick<Logger, 'warn'>): Promise<void> {
  const { db } = store;
  let byKey = ensured.get(db);
  if (byKey === undefined) ensured.set(db, (byKey = new Map()));
  const memo = `${sealTag(settings.webhookEncryptionKey)}:${settings.decisionSigningKey ?? ''}`;
  let done = byKey.get(memo);
  if (done === undefined) {
    done = (async () => {
      const seal = sealingKey(settings.webhookEncryptionKey);
      const given = configuredKey(settings);
      if (given !== null) return publishConfiguredKey(store, given, seal);
      // The newest is a public half only (a configured key no longer given, or one sealed under another
      // encryption key than this process has): a new key signs from now on.
      const [newest] = await storedKeys(db, seal, log);
      if (newest?.privateKey) return;
      await createSigningKey(store, seal);
    })();
    byKey.set(memo, done);
    done.catch(() => byKey.delete(memo));
  }
  return done;
}

/**
 * The key that signs now: the configured one (DECISION_SIGNING_KEY), else the newest this process can open, read in the transaction and cached at the
 * configuration stamp. One it cannot open (sealed under another encryption key than this process has)
 * is passed over for the one before: its receipts verify all the same.
 */
export async function currentSigningKey(db: StoreDb, session: StoreSession, settings: KeySettings, log?: Pick<Logger, 'warn'>): Promise<ReceiptKey> {
  const given = configuredKey(settings);
  if (given !== null) return { kid: given.kid, privateKey: given.privateKey };
  const view = await viewIn(db, session);
  return view.get(`receipts:signing-key:${sealTag(settings.webhookEncryptionKey)}`, async () => {
    const keys = await storedKeys(db, sealingKey(settings.webhookEncryptionKey), log, session);
    const signing = keys.find((k) => k.privateKey !== null);
    if (!signing) throw new Error('no signing key this process can open: ensureSigningKey was not called');
    return { kid: signing.kid, privateKey: signing.privateKey! };
  });
}

/**
 * GET /.well-known/jwks.json: the public half of every key the deployment vouches for, the one signing now
 * first; never a private part. Opening a key decrypts it, so the list is cached at the configuration
 * stamp, which every writer of signing keys bumps (createSigningKey, publishConfiguredKey): a key added,
 * rotated in or given by DECISION_SIGNING_KEY, in any process on the store, is published at once.
 */
export async function publicKeys(db: StoreDb, settings: Pick<KeySettings, 'webhookEncryptionKey'>, log?: Pick<Logger, 'warn'>): Promise<{ keys: PublicJwk[] }> {
  const view = await configView(db);
  return view.get(`receipts:jwks:${sealTag(settings.webhookEncryptionKey)}`, async () => {
    const keys = await storedKeys(db, sealingKey(settings.webhookEncryptionKey), log);
    return { keys: keys.map((k): PublicJwk => Object.freeze({ kty: 'OKP', crv: 'Ed25519', x: k.x, kid: k.kid, alg: 'EdDSA', use: 'sig' })) };
  });
}
