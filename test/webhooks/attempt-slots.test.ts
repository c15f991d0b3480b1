// The per-process slot accounting behind the in-flight caps (src/webhooks/attempt-slots.ts), against a
// plain model: the list of keys holding a slot.
import test from 'ava';
import fc from 'fast-check';
import {
  AttemptSlots,
  hostOf,
  MAX_IN_FLIGHT_PER_ENDPOINT,
  MAX_IN_FLIGHT_PER_HOST,
  MAX_IN_FLIGHT_PER_ORGANIZATION,
  Reservations,
  type Caps,
  type Scope,
  type SlotKey,
} from '../../src/webhooks/attempt-slots.ts';

const SCOPES: Scope[] = ['endpoint', 'organization', 'host'];
const field = (scope: Scope, k: SlotKey) => (scope === 'endpoint' ? k.endpointId : scope === 'organization' ? k.organizationId : k.host);
const count = (held: SlotKey[], scope: Scope, id: string) => held.filter((k) => field(scope, k) === id).length;

// Endpoints belong to one organisation each; hosts are shared across organisations.
const endpointsArb = fc.array(fc.record({ organizationId: fc.constantFrom('o1', 'o2', 'o3'), host: fc.constantFrom('a.example.com', 'b.example.com') }), { minLength: 1, maxLength: 8 }).map((eps) =>
  eps.map((e, i): SlotKey => ({ endpointId: `e${i}`, ...e })),
);
const capsArb = fc.record({ endpoint: fc.integer({ min: 1, max: 3 }), organization: fc.integer({ min: 1, max: 6 }), host: fc.integer({ min: 1, max: 6 }) });
// A step takes a slot for endpoint `i` (modulo how many there are) or gives back held slot `i`.
const stepsArb = fc.array(fc.record({ take: fc.boolean(), i: fc.nat(100) }), { maxLength: 80 });

test('take and give agree with the model: a take succeeds exactly when every cap has room, none is ever exceeded, and all given back leaves nothing', (t) => {
  fc.assert(
    fc.property(endpointsArb, capsArb, stepsArb, (endpoints, caps: Caps, steps) => {
      const slots = new AttemptSlots(caps);
      const held: SlotKey[] = [];
      const turnedAway = new Set<string>();
      for (const step of steps) {
        if (step.take || held.length === 0) {
          const key = endpoints[step.i % endpoints.length];
          const expected = SCOPES.find((scope) => count(held, scope, field(scope, key)) >= caps[scope]) ?? null;
          const roomBefore = slots.room(key);
          const got = slots.take(key);
          if (got !== expected) return false;
          if ((roomBefore > 0) !== (got === null)) return false;
          if (got === null) held.push(key);
          else turnedAway.add(key.endpointId);
        } else {
          const [key] = held.splice(step.i % held.length, 1);
          if (slots.give(key) !== slots.waiting().length > 0) return false;
        }
        for (const key of endpoints) {
          for (const scope of SCOPES) {
            const n = slots.inFlight(scope, field(scope, key));
            if (n !== count(held, scope, field(scope, key)) || n > caps[scope]) return false;
          }
          if (slots.room(key) !== Math.min(...SCOPES.map((scope) => caps[scope] - count(held, scope, field(scope, key))))) return false;
        }
        // Every endpoint turned away is waiting (nothing here clears it), oldest first.
        if (!slots.waiting().every((k) => turnedAway.has(k.endpointId)) || slots.waiting().length !== turnedAway.size) return false;
        // What the sweep leaves out would be turned away: the endpoints and organisations at their cap,
        // and the endpoints it knows at a host at its cap.
        const { endpointIds, organizationIds } = slots.saturated();
        for (const id of endpointIds) {
          const key = endpoints.find((k) => k.endpointId === id)!;
          if (slots.room(key) > 0) return false;
        }
        for (const id of organizationIds) if (count(held, 'organization', id) < caps.organization) return false;
      }
      while (held.length > 0) slots.give(held.pop()!);
      for (const key of endpoints) for (const scope of SCOPES) if (slots.inFlight(scope, field(scope, key)) !== 0) return false;
      const left = slots.saturated();
      return left.endpointIds.length === 0 && left.organizationIds.length === 0;
    }),
  );
  t.pass();
});

test('one organisation\'s endpoints at one host take at most the organisation\'s cap; another organisation at another host still gets its slots', (t) => {
  const slots = new AttemptSlots({ endpoint: MAX_IN_FLIGHT_PER_ENDPOINT, organization: MAX_IN_FLIGHT_PER_ORGANIZATION, host: MAX_IN_FLIGHT_PER_HOST });
  const stuck = Array.from({ length: 5 }, (_, i): SlotKey => ({ endpointId: `stuck${i}`, organizationId: 'stuck', host: 'hangs.example.com' }));
  const taken = stuck.flatMap((k) => [slots.take(k), slots.take(k)]);
  t.is(taken.filter((r) => r === null).length, MAX_IN_FLIGHT_PER_ORGANIZATION);
  t.true(taken.includes('organization'));
  t.deepEqual(slots.saturated().organizationIds, ['stuck']);
  const healthy: SlotKey = { endpointId: 'ok', organizationId: 'healthy', host: 'answers.example.com' };
  t.is(slots.take(healthy), null);
  t.is(slots.take(healthy), null);
  t.is(slots.take(healthy), 'endpoint');
});

test('many organisations at one host take at most the host\'s cap; the sweep is told to leave out that host\'s endpoints it knows', (t) => {
  const slots = new AttemptSlots({ endpoint: 2, organization: 4, host: 4 });
  const keys = ['a', 'b', 'c'].map((org): SlotKey => ({ endpointId: `ep-${org}`, organizationId: org, host: 'shared.example.com' }));
  const results = keys.flatMap((k) => [slots.take(k), slots.take(k)]);
  t.deepEqual(results, [null, null, null, null, 'host', 'host']);
  t.deepEqual(slots.saturated().endpointIds.sort(), ['ep-a', 'ep-b', 'ep-c']);
  t.deepEqual(slots.saturated().organizationIds, []);
  // Giving one back makes room for the waiting endpoint, which is resumed.
  t.true(slots.give(keys[0]));
  t.is(slots.room(keys[2]), 1);
  t.deepEqual(slots.waiting().map((k) => k.endpointId), ['ep-c']);
});

test('reservations count against the room of everyone sharing a cap, and a resumed endpoint goes to the back of the line', (t) => {
  const slots = new AttemptSlots({ endpoint: 2, organization: 3, host: 10 });
  const a: SlotKey = { endpointId: 'a', organizationId: 'o', host: 'h.example.com' };
  const b: SlotKey = { endpointId: 'b', organizationId: 'o', host: 'h.example.com' };
  const reserved = new Reservations();
  t.is(slots.room(a, reserved), 2);
  reserved.add(a, 2);
  t.is(slots.room(b, reserved), 1, 'the organisation has 3, 2 are about to start');
  slots.markWaiting(a);
  slots.markWaiting(b);
  slots.markWaiting(a);
  t.deepEqual(slots.waiting().map((k) => k.endpointId), ['b', 'a']);
  slots.clearWaiting('b');
  t.deepEqual(slots.waiting().map((k) => k.endpointId), ['a']);
});

test('a cap is a whole number of at least 1; the host is the URL\'s hostname, port aside', (t) => {
  t.throws(() => new AttemptSlots({ endpoint: 2, organization: 0, host: 4 }), { instanceOf: RangeError });
  t.throws(() => new AttemptSlots({ endpoint: 1.5, organization: 4, host: 4 }), { instanceOf: RangeError });
  t.is(hostOf('https://Hooks.Example.com/a?b'), 'hooks.example.com');
  t.is(hostOf('https://localhost:8443/x'), 'localhost');
  t.is(hostOf('not a url'), 'not a url');
});
