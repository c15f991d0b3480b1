// The per-organisation mailbox: an organisation's commands start in order, one after another; the next starts once
// the previous one's writes are applied (its `applied` signal) or, failing that, once it has settled.
import test from 'ava';
import { Mailboxes } from '../../src/commands/mailboxes.ts';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

test('commands of one agent run in order; the next starts at the previous one\'s applied signal, before it settles', async (t) => {
  const mailboxes = new Mailboxes();
  const events: string[] = [];
  const durable = deferred();
  const first = mailboxes.run('agent', async (applied) => {
    events.push('first starts');
    applied();
    await durable.promise;
    events.push('first settles');
    return 1;
  });
  const second = mailboxes.run('agent', async () => {
    events.push('second starts');
    return 2;
  });
  t.is(await second, 2);
  t.deepEqual(events, ['first starts', 'second starts'], 'the second ran while the first waited for durability');
  durable.resolve();
  t.is(await first, 1);
  t.deepEqual(events, ['first starts', 'second starts', 'first settles']);
});

test('without the signal the next command waits for the previous one to settle, failed or not; other agents do not wait', async (t) => {
  const mailboxes = new Mailboxes();
  const events: string[] = [];
  const gate = deferred();
  const first = mailboxes.run('a', async () => {
    events.push('a1 starts');
    await gate.promise;
    events.push('a1 fails');
    throw new Error('refused');
  });
  const second = mailboxes.run('a', async () => {
    events.push('a2 starts');
  });
  const other = mailboxes.run('b', async () => {
    events.push('b1 starts');
  });
  await other;
  t.deepEqual(events, ['a1 starts', 'b1 starts']);
  gate.resolve();
  await t.throwsAsync(first, { message: 'refused' });
  await second;
  t.deepEqual(events, ['a1 starts', 'b1 starts', 'a1 fails', 'a2 starts']);
});
