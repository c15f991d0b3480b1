// Starting the wire listener as the web process does (EMBEDDED_MONGO_PORT, EMBEDDED_MONGO_HOST): a
// listener that other machines can reach, with no TLS, says so in the log at start.
import test from 'ava';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { openEmbeddedStore } from '../../src/store/embedded/embedded-store.ts';
import { startEmbeddedListener } from '../../src/store/wire/embedded-listener.ts';
import { isLoopbackAddress as isLoopback } from '../../src/loopback.ts';

async function startWith(host: string): Promise<Array<{ level: string; msg: string; address?: string }>> {
  const lines: string[] = [];
  const store = await openEmbeddedStore();
  const config = { ...loadConfig({ LOG_LEVEL: 'info', DATA_DIR: ':memory:', EMBEDDED_MONGO_PORT: '1', EMBEDDED_MONGO_HOST: host }), embeddedMongoPort: 0 };
  const listener = await startEmbeddedListener(store, config, createLogger('info', (line) => lines.push(line)), () => {});
  await listener!.close();
  await store.close();
  return lines.map((line) => JSON.parse(line));
}

test('a listener bound beyond loopback logs a warning at start; one on loopback does not', async (t) => {
  const exposed = (await startWith('0.0.0.0')).filter((line) => line.level === 'warn');
  t.is(exposed.length, 1);
  t.regex(exposed[0].msg, /reachable from the network, without TLS/);
  t.is(exposed[0].address, '0.0.0.0');
  t.deepEqual((await startWith('127.0.0.1')).filter((line) => line.level === 'warn'), []);
  t.deepEqual((await startWith('localhost')).filter((line) => line.level === 'warn'), [], 'judged by the address the name resolved to');
});

test('isLoopbackAddress: 127.0.0.0/8, ::1 and their IPv4-mapped form only', (t) => {
  for (const address of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) t.true(isLoopback(address), address);
  for (const address of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.127', '::ffff:10.0.0.1', '1270::1']) t.false(isLoopback(address), address);
});
