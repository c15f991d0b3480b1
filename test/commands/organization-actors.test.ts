// The organisation actors' memory: what one command leaves for the next, bounded, and forgotten on demand.
import test from 'ava';
import { OrganizationActors } from '../../src/commands/organization-actors.ts';

test('an actor remembers facts between commands, merged; forgetting one organisation leaves the others', (t) => {
  const actors = new OrganizationActors<{ a: number; b: string }>();
  t.deepEqual(actors.memory('org-1'), {});
  actors.remember('org-1', { a: 1 });
  actors.remember('org-1', { b: 'x' });
  actors.remember('org-2', { a: 2 });
  t.deepEqual(actors.memory('org-1'), { a: 1, b: 'x' });
  actors.forget('org-1');
  t.deepEqual(actors.memory('org-1'), {});
  t.deepEqual(actors.memory('org-2'), { a: 2 });
});

test('past the limit the least recently used organisation is forgotten', (t) => {
  const actors = new OrganizationActors<{ n: number }>(2);
  actors.remember('a', { n: 1 });
  actors.remember('b', { n: 2 });
  actors.remember('a', { n: 3 }); // a is now the most recent
  actors.remember('c', { n: 4 });
  t.is(actors.size, 2);
  t.deepEqual(actors.memory('b'), {});
  t.deepEqual(actors.memory('a'), { n: 3 });
  t.deepEqual(actors.memory('c'), { n: 4 });
  t.throws(() => new OrganizationActors(0), { instanceOf: RangeError });
});

test('an organisation weighs what its memory holds: past the limit in all, the least recently used go', (t) => {
  const actors = new OrganizationActors<{ windows: string[] }>(10, (m) => 1 + (m.windows?.length ?? 0));
  actors.remember('a', { windows: ['w1', 'w2', 'w3'] }); // 4
  actors.remember('b', { windows: ['w1', 'w2'] }); // 3
  actors.remember('c', {}); // 1: 8 in all
  t.is(actors.size, 3);
  actors.remember('b', { windows: ['w1', 'w2', 'w3', 'w4'] }); // b weighs 5 now: 10 in all, at the limit
  t.is(actors.size, 3);
  actors.remember('c', { windows: ['w1'] }); // 11: a, the least recently used, goes
  t.deepEqual(actors.memory('a'), {});
  t.deepEqual(actors.memory('b'), { windows: ['w1', 'w2', 'w3', 'w4'] });
  // One organisation heavier than the limit is still remembered alone, until another comes.
  actors.remember('d', { windows: Array.from({ length: 20 }, (_, i) => `w${i}`) });
  t.is(actors.size, 1);
  t.is(actors.memory('d').windows!.length, 20);
  actors.forget('d');
  actors.remember('e', {});
  t.is(actors.size, 1, 'forgetting gave its weight back');
});

test('commands of one organisation run in order through the actor', async (t) => {
  const actors = new OrganizationActors<object>();
  const order: number[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const first = actors.run('org', async () => {
    await gate;
    order.push(1);
  });
  const second = actors.run('org', async () => {
    order.push(2);
  });
  release();
  await Promise.all([first, second]);
  t.deepEqual(order, [1, 2]);
});
