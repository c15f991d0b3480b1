// The service reads from the primary whatever MONGODB_URI says (docs/operate/mongodb.md): a purchase read
// right after its 201, or a decision's own reads outside its transaction, must see the latest write, which
// a secondary may not have yet. An operator's `readPreference=secondaryPreferred`, meant to spare the
// primary, is for analysts' connections (docs/operate/wire-protocol.md), not the service's.
import test from 'ava';
import { openMongoStore } from '../../src/store/mongo.ts';
import { startListener } from '../helpers/wire.ts';

test('a readPreference in MONGODB_URI does not send the service\'s reads to a secondary', async (t) => {
  const wire = await startListener();
  t.teardown(() => wire.close());
  const store = await openMongoStore(wire.serviceUrl('reads', 'readPreference=secondaryPreferred'), { dbName: 'reads' });
  t.teardown(() => store.close());
  // What each read is sent with (the listener, a single server reached directly, would answer either way).
  t.is(store.client.readPreference.mode, 'primary');
  t.is(store.db.raw.readPreference.mode, 'primary');
  await store.db.collection('things').insertOne({ _id: 'one' as never });
  t.truthy(await store.db.collection('things').findOne({ _id: 'one' as never }));
});
