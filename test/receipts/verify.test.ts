// The offline verifier's check of one receipt (src/receipts/verify.ts, shared by verify-receipts and
// verify-log): only an EdDSA receipt of the receipt type, signed by the key its kid names in the JWKS,
// spelled as it was signed, verifies. The receipts are made by the service's own signer.
import test from 'ava';
import { generateKeyPairSync, sign } from 'node:crypto';
import { EMPTY_CHAIN, nextReceipt, type DecisionFacts } from '../../src/receipts/chain.ts';
import { thumbprint } from '../../src/receipts/keys.ts';
import { keysOf, verifyReceipt } from '../../src/receipts/verify.ts';

function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string };
  return { kid: thumbprint(x), x, privateKey };
}

const signer = keyPair();
const other = keyPair();
const jwks = keysOf({ keys: [signer, other].map(({ kid, x }) => ({ kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' })) });

const facts: DecisionFacts = {
  iss: 'https://spend.example.com',
  organizationId: 'org',
  agentId: 'agent',
  purchaseRequestId: 'p',
  decisionId: 'd',
  kind: 'INITIAL',
  outcome: 'APPROVED',
  reasonCodes: ['WITHIN_POLICY'],
  amountMinor: '100',
  currency: 'EUR',
  merchant: 'Paper Co',
  evaluatedAt: '2026-01-01T00:00:00.000Z',
  policyVersionIds: [],
  requestSha256: '0'.repeat(64),
};

const { jws } = nextReceipt(EMPTY_CHAIN, facts, signer);
const [, payloadPart] = jws.split('.');
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
/** A JWS over the receipt's payload with this header, signed with `key`. */
const signedWith = (header: unknown, key = signer.privateKey) => {
  const input = `${b64(header)}.${payloadPart}`;
  return `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}`;
};

test('a receipt of the service verifies and gives its payload', (t) => {
  t.like(verifyReceipt(jws, jwks), { seq: 1, prev: null, outcome: 'APPROVED' });
});

test('alg none, another alg or another typ is refused, whatever the signature', (t) => {
  const [, p] = jws.split('.');
  t.throws(() => verifyReceipt(`${b64({ alg: 'none', kid: signer.kid, typ: 'decision-receipt+jwt' })}.${p}.`, jwks), { message: /unexpected header \(alg none/ });
  t.throws(() => verifyReceipt(signedWith({ alg: 'ES256', kid: signer.kid, typ: 'decision-receipt+jwt' }), jwks), { message: /unexpected header/ });
  t.throws(() => verifyReceipt(signedWith({ alg: 'EdDSA', kid: signer.kid, typ: 'JWT' }), jwks), { message: /typ JWT/ });
  t.throws(() => verifyReceipt(signedWith(null), jwks), { message: /not a JSON object/ });
});

test('a kid that is not in the JWKS, or that names another key of it than the one that signed, is refused', (t) => {
  const stranger = keyPair();
  t.throws(() => verifyReceipt(signedWith({ alg: 'EdDSA', kid: stranger.kid, typ: 'decision-receipt+jwt' }, stranger.privateKey), jwks), { message: /not in the JWKS/ });
  t.throws(() => verifyReceipt(signedWith({ alg: 'EdDSA', kid: other.kid, typ: 'decision-receipt+jwt' }), jwks), { message: /does not verify/ });
  t.notThrows(() => verifyReceipt(signedWith({ alg: 'EdDSA', kid: signer.kid, typ: 'decision-receipt+jwt' }), jwks));
});

test('a receipt spelled otherwise than signed is refused: padding, characters outside base64url', (t) => {
  t.throws(() => verifyReceipt(`${jws}==`, jwks), { message: /signature is not spelled/ });
  const [h, p, s] = jws.split('.');
  t.throws(() => verifyReceipt(`${h}.${p}.${s.slice(0, 10)}+${s.slice(10)}`, jwks), { message: /signature is not spelled/ });
  t.throws(() => verifyReceipt(`${h}=.${p}.${s}`, jwks), { message: /not a JSON object in base64url/ });
});

test('a JWKS with a private part is refused', (t) => {
  t.throws(() => keysOf({ keys: [{ kty: 'OKP', crv: 'Ed25519', x: signer.x, kid: signer.kid, d: 'AAAA' }] }), { message: /private part/ });
});
