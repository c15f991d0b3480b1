// MongoDB configuration (docs/internals/design.md §2): the database is named by MONGODB_DB or the URI's path, never the
// driver's silent `test` default, and every command has a deadline (MONGODB_TIMEOUT_MS).
import test from 'ava';
import { ConfigError, databaseInUri, loadConfig } from '../../src/config.ts';
import { openStore } from '../../src/store/open-store.ts';

const config = (env: Record<string, string>) => loadConfig({ LOG_LEVEL: 'error', ...env });

test('the database comes from the URI path', (t) => {
  t.is(config({ MONGODB_URI: 'mongodb://db1:27017,db2:27017/spend?replicaSet=rs0' }).mongodbDb, 'spend');
  t.is(config({ MONGODB_URI: 'mongodb+srv://user:p%40ss@cluster0.example.mongodb.net/spend_control?retryWrites=true' }).mongodbDb, 'spend_control');
  t.is(config({ MONGODB_URI: 'mongodb://localhost/caf%C3%A9' }).mongodbDb, 'café');
});

test('MONGODB_DB names it, and wins over the URI', (t) => {
  t.is(config({ MONGODB_URI: 'mongodb+srv://cluster0.example.mongodb.net/?retryWrites=true', MONGODB_DB: 'spend' }).mongodbDb, 'spend');
  t.is(config({ MONGODB_URI: 'mongodb://localhost/other', MONGODB_DB: 'spend' }).mongodbDb, 'spend');
});

test('neither names a database: refused with a message saying what to set', (t) => {
  for (const uri of ['mongodb+srv://cluster0.example.mongodb.net/?retryWrites=true&w=majority', 'mongodb://localhost:27017', 'mongodb://localhost:27017/']) {
    const error = t.throws(() => config({ MONGODB_URI: uri }), { instanceOf: ConfigError });
    t.regex(error!.message, /^configuration: MONGODB_DB must be set/);
    t.regex(error!.message, /"test"/);
  }
});

test('a database name MongoDB would refuse is refused at start', (t) => {
  t.throws(() => config({ MONGODB_URI: 'mongodb://localhost/', MONGODB_DB: 'spend.control' }), { instanceOf: ConfigError, message: /MONGODB_DB/ });
  t.throws(() => config({ MONGODB_URI: 'mongodb://localhost/a%20b' }), { instanceOf: ConfigError, message: /MONGODB_URI/ });
  t.throws(() => config({ MONGODB_URI: 'mongodb://localhost/', MONGODB_DB: 'x'.repeat(64) }), { instanceOf: ConfigError });
});

test('the embedded default needs no database name', (t) => {
  const c = config({});
  t.is(c.mongodbUri, null);
  t.is(c.mongodbDb, null);
});

test('MONGODB_TIMEOUT_MS: a sensible default, a whole number of milliseconds when set', (t) => {
  t.is(config({}).mongodbTimeoutMs, 10_000);
  t.is(config({ MONGODB_TIMEOUT_MS: '2500' }).mongodbTimeoutMs, 2500);
  t.throws(() => config({ MONGODB_TIMEOUT_MS: '10s' }), { instanceOf: ConfigError, message: /MONGODB_TIMEOUT_MS/ });
  t.throws(() => config({ MONGODB_TIMEOUT_MS: '0' }), { instanceOf: ConfigError, message: /MONGODB_TIMEOUT_MS/ });
});

test('databaseInUri reads only the path', (t) => {
  t.is(databaseInUri('mongodb://u:p@h1,h2/db?authSource=admin'), 'db');
  t.is(databaseInUri('mongodb://h1/?authSource=admin'), null);
  t.is(databaseInUri('mongodb://h1'), null);
});

test('openStore refuses a MongoDB URI without a database name before connecting', async (t) => {
  await t.throwsAsync(openStore({ mongodbUri: 'mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=1' }), { message: /database name/ });
});
