// Without a browser the dashboard's browser tests fail with instructions, in CI and on a laptop alike.
import test from 'ava';
import { chromiumPath } from '../helpers/browser.ts';

test('no Chromium: a clear failure saying how to install one, never a silent pass', (t) => {
  const nothing = () => false;
  const local = t.throws(() => chromiumPath({}, nothing));
  t.regex(local!.message, /No Chromium found for the dashboard's browser tests\. Install one with "apt-get install -y chromium".*CHROMIUM_PATH/);
  const ci = t.throws(() => chromiumPath({ CI: 'true' }, nothing));
  t.regex(ci!.message, /\(CI must run them\)/);
  t.throws(() => chromiumPath({ CHROMIUM_PATH: '/nowhere/chromium' }, nothing), { message: 'CHROMIUM_PATH is /nowhere/chromium, which does not exist.' });
  t.is(chromiumPath({ CHROMIUM_PATH: '/opt/chrome' }, (p) => p === '/opt/chrome'), '/opt/chrome');
  t.is(chromiumPath({}, (p) => p === '/usr/bin/chromium'), '/usr/bin/chromium');
});
