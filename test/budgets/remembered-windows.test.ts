// What an organisation's actor remembers of its budget windows between commands (rememberWindows):
// the windows a command read or wrote, as they now stand, the most recently used kept, bounded.
import test from 'ava';
import { REMEMBERED_WINDOWS, rememberWindows, type BudgetWindowDoc } from '../../src/budgets/window-state.ts';

const window = (id: string, version: number) => ({ _id: id, version }) as BudgetWindowDoc;

test('a command\'s windows replace what was remembered of them, and are the most recent', (t) => {
  const before = new Map([
    ['a', window('a', 1)],
    ['b', window('b', 1)],
  ]);
  const after = rememberWindows(before, new Map([['a', window('a', 2)]]));
  t.deepEqual([...after.keys()], ['b', 'a']);
  t.is(after.get('a')!.version, 2);
  t.is(before.get('a')!.version, 1, 'what was remembered is not changed in place');
  t.deepEqual([...rememberWindows(undefined, new Map([['c', window('c', 1)]])).keys()], ['c']);
});

test('past REMEMBERED_WINDOWS the least recently used windows are forgotten', (t) => {
  const many = new Map(Array.from({ length: REMEMBERED_WINDOWS }, (_, i) => [`w${i}`, window(`w${i}`, 1)] as const));
  const after = rememberWindows(many, new Map([['new', window('new', 1)], ['w0', window('w0', 2)]]));
  t.is(after.size, REMEMBERED_WINDOWS);
  t.false(after.has('w1'), 'the oldest untouched one went');
  t.true(after.has('w0') && after.has('new'));
  t.deepEqual([...after.keys()].slice(-2), ['new', 'w0']);
});
