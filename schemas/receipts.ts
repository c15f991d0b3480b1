// Decision receipts on the wire (docs/integrate/receipts.md): a purchase's receipts, and the deployment's
// public signing keys (JWKS, RFC 7517; Ed25519 keys as RFC 8037 writes them).
import Type from 'typebox';

export const DecisionReceipt = Type.String({
  pattern: '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$',
  description: 'A compact JWS (alg EdDSA, typ decision-receipt+jwt) signed with a key of GET /.well-known/jwks.json.',
});

export const ReceiptList = Type.Object({
  receipts: Type.Array(
    Type.Object({
      seq: Type.Integer({ minimum: 1, description: 'The receipt\'s place in its organisation\'s chain, from 1 without gaps.' }),
      receipt: DecisionReceipt,
    }),
    { description: 'One per decision about the purchase (the initial one, then a person\'s answer), oldest first.' },
  ),
});

export const Jwks = Type.Object({
  keys: Type.Array(
    Type.Object({
      kty: Type.Literal('OKP'),
      crv: Type.Literal('Ed25519'),
      x: Type.String({ description: 'The public key, base64url.' }),
      kid: Type.String({ description: 'The key\'s RFC 7638 thumbprint: the `kid` of the receipts it signed.' }),
      alg: Type.Literal('EdDSA'),
      use: Type.Literal('sig'),
    }),
    { description: 'Every signing key this deployment has used, newest (the one signing now) first; retired keys stay so that old receipts keep verifying.' },
  ),
});
