// The embedded engine's group commit as the organisation mailboxes use it: an organisation's next command starts
// once the previous one is applied in its group (onApplied), and must join that group, or one agent
// could decide only once per commit, a turn of the event loop apart.
import test from 'ava';
import { Mailboxes } from '../../src/commands/mailboxes.ts';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';

test("an agent's commands, each started when the one before is applied, share one commit", async (t) => {
  // Without the group's time limit, which a loaded machine can reach within ten transactions: this is
  // about which commands join the group, not how long it stays open.
  const store = await openEmbeddedStore({ groupMaxMs: 60_000 });
  t.teardown(() => store.close());
  const c = store.db.collection<{ _id: string; n: number }>('counters');
  await c.insertOne({ _id: 'agent', n: 0 });
  const mailboxes = new Mailboxes();
  const events: string[] = [];
  const commands = Array.from({ length: 10 }, (_, i) =>
    mailboxes
      .run('agent', (applied) =>
        store.withTransaction(
          async (session) => {
            const { n } = (await c.findOne({ _id: 'agent' }, { session }))!;
            await c.updateOne({ _id: 'agent', n }, { $set: { n: n + 1 } }, { session });
          },
          { onApplied: () => (events.push(`applied ${i}`), applied()) },
        ),
      )
      .then(() => events.push(`durable ${i}`)),
  );
  await Promise.all(commands);
  // All ten ran before the first was acknowledged: one group, one commit.
  t.deepEqual(events.slice(0, 10), Array.from({ length: 10 }, (_, i) => `applied ${i}`));
  t.is((await c.findOne({ _id: 'agent' }))!.n, 10);
});

test('a lone write is acknowledged without waiting for other traffic, and a read outside a transaction sees it', async (t) => {
  const store = await openEmbeddedStore();
  t.teardown(() => store.close());
  const c = store.db.collection<{ _id: string; n: number }>('counters');
  for (let n = 1; n <= 3; n++) {
    await c.updateOne({ _id: 'a' }, { $set: { n } }, { upsert: true });
    t.deepEqual(await c.findOne({ _id: 'a' }), { _id: 'a', n });
  }
});
