// 500 internal_error (SPEC.md 7): a server failure renders the error body, says it is safe to retry,
// and does not leak the cause.
import test from 'ava';
import { startApp } from '../helpers/app.ts';
import { applyManifest, acmeManifest } from '../helpers/fixtures.ts';

test('a failing store answers 500 internal_error without exposing the cause', async (t) => {
  const app = await startApp();
  try {
    const org = await applyManifest(app, acmeManifest('doomed'));
    const purchases = app.store.db.collection('purchases');
    // The store fails underneath a submission, as a lost database connection would.
    (purchases as { insertOne: unknown }).insertOne = async () => {
      throw new Error('connection to the database was lost: secret-host:27017');
    };
    const res = await app.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: 100, reason: 'paper' } });
    t.is(res.status, 500);
    t.is(res.body.error.code, 'internal_error');
    t.regex(res.body.error.message, /safe to retry/);
    t.false(res.text.includes('secret-host'));
  } finally {
    await app.close();
  }
});
