// The deployment's Ed25519 signing keys (docs/integrate/receipts.md): generated on first start (or when
// the newest cannot be opened any more), the private half sealed in the store with the key that seals
// webhook secrets (WEBHOOK_ENCRYPTION_KEY, generated on the embedded store: src/bootstrap.ts). The
// newest key signs; every key's public half stays in the JWKS, so that old receipts keep verifying.
// `npm run admin -- rotate-signing-key` adds a newer one and bumps the configuration stamp, so that
// every process signs with it from its next decision (src/cache/config-cache.ts).
import { createHash, createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { bumpConfigStamp, viewIn } from '../cache/config-cache.ts';
import type { StoreDb, StoreSession } from '../store/store.ts';
import { decryptSecret, encryptSecret, parseEncryptionKey } from '../webhooks/secrets.ts';
import type { ReceiptKey } from './chain.ts';
import { receiptCollections, type SigningKeyDoc } from './documents.ts';
import type { PublicJwk } from './verify.ts';

const PLAIN = 'plain.';

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

const ensured = new WeakMap<StoreDb, Promise<void>>();

/**
 * Makes sure a usable signing key exists: one is made when there is none, or when the newest cannot be
 * opened with this deployment's encryption key (it changed). Once per process and store; called at
 * start and before a command that signs. Two processes starting at once may each make one: both stay
 * in the JWKS, and the newest signs.
 */
export function ensureSigningKey(db: StoreDb, rawEncryptionKey: string | null): Promise<void> {
  let done = ensured.get(db);
  if (done === undefined) {
    done = (async () => {
      const seal = sealingKey(rawEncryptionKey);
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
    ensured.set(db, done);
    done.catch(() => ensured.delete(db));
  }
  return done;
}

/**
 * The key that signs now: the newest this process can open, read in the transaction and cached at the
 * configuration stamp. One it cannot open (sealed under another encryption key than this process has)
 * is passed over for the one before: its receipts verify all the same.
 */
export async function currentSigningKey(db: StoreDb, session: StoreSession, rawEncryptionKey: string | null): Promise<ReceiptKey> {
  const view = await viewIn(db, session);
  return view.get('receipts:signing-key', async () => {
    const seal = sealingKey(rawEncryptionKey);
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
