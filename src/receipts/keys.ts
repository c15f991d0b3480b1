// The deployment's Ed25519 signing keys (docs/integrate/receipts.md): generated on first start (or when
// the newest cannot be opened any more), the private half sealed in the store with the key that seals
// webhook secrets (WEBHOOK_ENCRYPTION_KEY, generated on the embedded store: src/bootstrap.ts). The
// newest key signs; every key's public half stays in the JWKS, so that old receipts keep verifying.
// `npm run admin -- rotate-signing-key` adds a newer one and bumps the configuration stamp, so that
// every process signs with it from its next decision (src/cache/config-cache.ts).
// Or the operator gives the key (DECISION_SIGNING_KEY): it then signs, and only its public half is
// stored, so that the JWKS keeps publishing it after it is replaced.
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { isDuplicateKeyError } from '../store/store.ts';
import { bumpConfigStamp, viewIn } from '../cache/config-cache.ts';
import type { StoreDb, StoreSession } from '../store/store.ts';
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

/** RFC 7638 thumbprint of an Ed25519 public key (RFC 8037 §2). */
export const thumbprint = (x: string): string => createHash('sha256').update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x })).digest('base64url');

function openPrivateKey(doc: SigningKeyDoc, seal: Buffer | null): KeyObject {
  if (doc.privateKey === CONFIGURED) throw new Error(`signing key ${doc._id} was given by DECISION_SIGNING_KEY, which no longer holds it`);
  const der = doc.privateKey.startsWith(PLAIN)
    ? Buffer.from(doc.privateKey.slice(PLAIN.length), 'base64url')
    : seal === null
      ? (() => {
          throw new Error(`signing key ${doc._id} is sealed, and no encryption key is configured`);
        })()
      : Buffer.from(decryptSecret(seal, doc.privateKey, doc._id), 'base64url');
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
}

/** Makes a new signing key and stores it: from now on the newest, so the one that signs. */
export async function createSigningKey(db: StoreDb, seal: Buffer | null, now = new Date()): Promise<string> {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  const kid = thumbprint(x);
  const der = (privateKey.export({ format: 'der', type: 'pkcs8' }) as Buffer).toString('base64url');
  await receiptCollections(db).keys.insertOne({
    _id: kid,
    publicJwk: { kty: 'OKP', crv: 'Ed25519', x },
    privateKey: seal === null ? PLAIN + der : encryptSecret(seal, der, kid),
    createdAt: now,
  });
  await bumpConfigStamp(db);
  return kid;
}

const newestFirst = { createdAt: -1, _id: -1 } as const;

/**
 * Whether a key sealed with `seal` is one the service can open: the newest key in the store that it
 * sealed opens with it (or there is none, or it is unsealed). rotate-signing-key runs with its own
 * environment; without the service's WEBHOOK_ENCRYPTION_KEY it would add a key the service passes over.
 */
export async function sealOpensNewestKey(db: StoreDb, seal: Buffer | null): Promise<boolean> {
  const docs = await receiptCollections(db).keys.find({}, { sort: newestFirst }).toArray();
  const newest = docs.find((d) => d.privateKey !== CONFIGURED);
  if (newest === undefined) return true;
  try {
    openPrivateKey(newest, seal);
    return true;
  } catch {
    return false;
  }
}

/** The configured key's public half in the JWKS, kept there once it is replaced. */
async function publishConfiguredKey(db: StoreDb, key: ConfiguredKey): Promise<void> {
  if (await receiptCollections(db).keys.findOne({ _id: key.kid }, { projection: { _id: 1 } })) return;
  try {
    await receiptCollections(db).keys.insertOne({ _id: key.kid, publicJwk: { kty: 'OKP', crv: 'Ed25519', x: key.x }, privateKey: CONFIGURED, createdAt: new Date() });
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err; // another process published it first
  }
  await bumpConfigStamp(db);
}

// Per store and configured key: a test may run services with different keys on one store.
const ensured = new WeakMap<StoreDb, Map<string, Promise<void>>>();

/**
 * Makes sure a usable signing key exists: one is made when there is none, or when the newest cannot be
 * opened with this deployment's encryption key (it changed). Once per process and store; called at
 * start and before a command that signs. Two processes starting at once may each make one: both stay
 * in the JWKS, and the newest signs.
 */
export function ensureSigningKey(db: StoreDb, settings: KeySettings): Promise<void> {
  let byKey = ensured.get(db);
  if (byKey === undefined) ensured.set(db, (byKey = new Map()));
  const memo = settings.decisionSigningKey ?? '';
  let done = byKey.get(memo);
  if (done === undefined) {
    done = (async () => {
      const given = configuredKey(settings);
      if (given !== null) return publishConfiguredKey(db, given);
      const seal = sealingKey(settings.webhookEncryptionKey);
      const [newest] = await receiptCollections(db).keys.find({}, { sort: newestFirst, limit: 1 }).toArray();
      if (newest) {
        try {
          openPrivateKey(newest, seal);
          return;
        } catch {
          // Sealed under another key: a new one signs from now on; the old public half stays published.
        }
      }
      await createSigningKey(db, seal);
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
export async function currentSigningKey(db: StoreDb, session: StoreSession, settings: KeySettings): Promise<ReceiptKey> {
  const given = configuredKey(settings);
  if (given !== null) return { kid: given.kid, privateKey: given.privateKey };
  const view = await viewIn(db, session);
  return view.get('receipts:signing-key', async () => {
    const seal = sealingKey(settings.webhookEncryptionKey);
    const docs = await receiptCollections(db).keys.find({}, { sort: newestFirst, session }).toArray();
    let failure: unknown = new Error('no signing key: ensureSigningKey was not called');
    for (const doc of docs) {
      try {
        return { kid: doc._id, privateKey: openPrivateKey(doc, seal) };
      } catch (err) {
        failure = err;
      }
    }
    throw failure;
  });
}

/** GET /.well-known/jwks.json: every key's public half, newest first; never a private part. */
export async function publicKeys(db: StoreDb): Promise<{ keys: PublicJwk[] }> {
  const docs = await receiptCollections(db).keys.find({}, { sort: newestFirst, projection: { publicJwk: 1 } }).toArray();
  return { keys: docs.map((d) => ({ kty: 'OKP', crv: 'Ed25519', x: d.publicJwk.x, kid: d._id, alg: 'EdDSA', use: 'sig' })) };
}
