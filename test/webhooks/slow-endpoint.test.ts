// One slow webhook receiver does not hold up the others. The whole service (API and Agenda
// worker) runs in a child process trusting a throwaway CA, as in end-to-end.test.ts; this process plays
// two real HTTPS receivers: one that never answers and one that answers at once. The request timeout is
// set far beyond the test, so no attempt to the hanging receiver ends while the test runs: every healthy
// delivery that arrives does so while the hanging receiver still holds its requests open. What is
// asserted is structural, not speed: all 100 healthy deliveries arrive, and the hanging endpoint never
// has more than the per-endpoint cap of attempts in flight.
import test from 'ava';
import { createTestPki, startReceiver, type Receiver, type TestPki } from '../helpers/https-receiver.ts';
import { acmeManifest, applyManifest } from '../helpers/fixtures.ts';
import { startChildService, type ChildService } from './fixtures/child-service.ts';
import { MAX_IN_FLIGHT_PER_ENDPOINT } from '../../src/webhooks/attempt-slots.ts';

const EVENTS = 100;

let pki: TestPki;
let api: ChildService;
const receivers: Receiver[] = [];

test.before(async () => {
  pki = await createTestPki();
  api = await startChildService(pki, { TEST_WEBHOOK_TIMEOUT_MS: String(10 * 60_000) });
});

test.after.always(async () => {
  api?.stop();
  await Promise.all(receivers.map((r) => r.close()));
  await pki?.cleanup();
});

test('with one endpoint hanging, every event reaches a healthy endpoint while the hanging one holds at most the cap of attempts', async (t) => {
  const hanging = await startReceiver({ ...pki.trusted, responses: [{ status: 200, hang: true }] });
  const healthy = await startReceiver({ ...pki.trusted, responses: [{ status: 204 }] });
  receivers.push(hanging, healthy);
  const org = await applyManifest(api, acmeManifest('slowhook'));
  for (const receiver of [hanging, healthy]) {
    const res = await api.request('/v1/webhooks', { key: org.keys['admin-key'], body: { url: `${receiver.origin}/hooks`, subscribedTypes: ['purchase.approved'] } });
    t.is(res.status, 201, res.text);
  }

  for (let i = 0; i < EVENTS; i++) {
    const res = await api.request('/v1/purchase-requests', { key: org.keys['buyer-key'], body: { merchant: 'Paper Co', amountMinor: '1200', reason: `paper ${i}` } });
    t.is(res.body?.decision?.outcome, 'APPROVED', res.text);
  }

  // Every event reaches the healthy receiver; meanwhile the hanging one never holds more than the cap.
  const deadline = Date.now() + 90_000;
  const delivered = () => new Set(healthy.requests.map((r) => r.headers['service-webhook-id'])).size;
  while (delivered() < EVENTS && hanging.maxInFlight <= MAX_IN_FLIGHT_PER_ENDPOINT && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  t.true(hanging.maxInFlight <= MAX_IN_FLIGHT_PER_ENDPOINT, `the hanging endpoint had ${hanging.maxInFlight} attempts in flight at once`);
  t.is(new Set(healthy.requests.map((r) => r.headers['service-webhook-id'])).size, EVENTS);
  // ...and all of that while the hanging receiver still held every request it had been sent: none timed out.
  t.is(hanging.inFlight, hanging.requests.length);
  t.is(hanging.maxInFlight, MAX_IN_FLIGHT_PER_ENDPOINT, 'the hanging endpoint was attempted up to its cap, no further');
});
