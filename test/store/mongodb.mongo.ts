// The store conformance suite against real MongoDB. Not named *.test.ts on purpose, so the
// default `npm test` never sees it; `npm run test:mongo` (scripts/test-mongo.ts) runs it with
// TEST_MONGODB_URI set.
import { testStore } from '../helpers/store.ts';
import { registerStoreConformance } from './conformance.ts';

if (!process.env.TEST_MONGODB_URI) {
  throw new Error('test/store/mongodb.mongo.ts needs TEST_MONGODB_URI: run it through `npm run test:mongo`');
}

// MongoDB's TTL monitor runs every 60 s unless ttlMonitorSleepSecs was lowered.
registerStoreConformance(testStore, { name: 'mongodb', ttlDeadlineMs: 90_000 });
