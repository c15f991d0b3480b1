// The store conformance suites (the API, test/store/conformance.ts, and the purchase commands,
// test/store/command-conformance.ts) against real MongoDB. Not named *.test.ts on purpose, so the
// default `npm test` never sees it; `npm run test:mongo` (scripts/test-mongo.ts) runs it with
// TEST_MONGODB_URI set.
import { testStore } from '../helpers/store.ts';
import { registerStoreConformance } from './conformance.ts';
import { registerCommandConformance } from './command-conformance.ts';

if (!process.env.TEST_MONGODB_URI) {
  throw new Error('test/store/mongodb.mongo.ts needs TEST_MONGODB_URI: run it through `npm run test:mongo`');
}

// MongoDB's TTL monitor runs every 60 s unless ttlMonitorSleepSecs was lowered.
registerStoreConformance(testStore, { name: 'mongodb', ttlDeadlineMs: 90_000 });
registerCommandConformance(testStore, { name: 'mongodb' });
