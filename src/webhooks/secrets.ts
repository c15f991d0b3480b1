// Webhook signing secrets (docs/reference/contract.md §2.8) and their encryption at rest (docs/reference/decisions.md: AES-256-GCM
// with a key from WEBHOOK_ENCRYPTION_KEY).
//
// Blob format: `v1.<iv>.<ciphertext>.<tag>`, each part base64url; iv is 12 random bytes (NIST SP
// 800-38D 8.2.2), tag 16 bytes. The version prefix lets the scheme change without guessing.
// Optional associated data (for example the endpoint id) binds a blob to its owner, so a blob
// copied onto another endpoint fails to decrypt.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export const WEBHOOK_SECRET_PREFIX = 'cmp_whs_';
export const WEBHOOK_SECRET_PATTERN = /^cmp_whs_[A-Za-z0-9_-]{43}$/;

const BLOB_VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** `cmp_whs_` + base64url of 32 random bytes (43 characters, no padding). */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * Parses WEBHOOK_ENCRYPTION_KEY: exactly 32 bytes, written as 64 hex characters or as base64 /
 * base64url (padding optional). The message never repeats the value.
 */
export function parseEncryptionKey(value: string): Buffer {
  const text = typeof value === 'string' ? value.trim() : '';
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
    const unpadded = text.replace(/=+$/, '');
    const normalised = unpadded.replace(/\+/g, '-').replace(/\//g, '_');
    const bytes = Buffer.from(normalised, 'base64url');
    // Round-trip so that stray characters Node would silently skip cannot slip through.
    if (bytes.length === KEY_BYTES && bytes.toString('base64url') === normalised) return bytes;
  }
  throw new Error(
    'WEBHOOK_ENCRYPTION_KEY must be 32 bytes written as 64 hex characters or as base64/base64url ' +
      '(for example the output of `openssl rand -hex 32`)',
  );
}

function assertKey(key: Buffer): void {
  if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES) throw new RangeError('encryption key must be 32 bytes');
}

export function encryptSecret(key: Buffer, secret: string, associatedData?: string): string {
  assertKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  if (associatedData !== undefined) cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  const tag = cipher.getAuthTag();
  return [BLOB_VERSION, iv.toString('base64url'), ciphertext.toString('base64url'), tag.toString('base64url')].join('.');
}

export class SecretDecryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretDecryptionError';
  }
}

/** Throws SecretDecryptionError when the blob is malformed, tampered with or under another key. */
export function decryptSecret(key: Buffer, blob: string, associatedData?: string): string {
  assertKey(key);
  const parts = typeof blob === 'string' ? blob.split('.') : [];
  if (parts.length !== 4 || parts[0] !== BLOB_VERSION) {
    throw new SecretDecryptionError('unrecognised encrypted secret format');
  }
  const b64 = /^[A-Za-z0-9_-]*$/;
  if (!parts.slice(1).every((p) => b64.test(p))) throw new SecretDecryptionError('encrypted secret is not base64url');
  const iv = Buffer.from(parts[1], 'base64url');
  const ciphertext = Buffer.from(parts[2], 'base64url');
  const tag = Buffer.from(parts[3], 'base64url');
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) {
    throw new SecretDecryptionError('encrypted secret has a wrong IV or tag length');
  }
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    if (associatedData !== undefined) decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(tag);
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretDecryptionError('encrypted secret failed authentication (wrong key or tampered data)');
  }
}
