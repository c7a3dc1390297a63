import { fakeMongoBackend } from './backends.js';
import type { FakeMongoBackend } from './backends.js';
import { describeRollupSuite } from './rollups-suite.js';
import { describeEngineSuite, describeStorageSuite } from './storage-suite.js';

for (const mode of ['timeseries', 'buckets'] as const) {
  describeStorageSuite(`MongoStorage (${mode}) over the driver fake`, fakeMongoBackend(mode));
  describeEngineSuite(`MongoStorage (${mode}) over the driver fake`, fakeMongoBackend(mode));
  describeRollupSuite(
    `MongoStorage (${mode}) over the driver fake`,
    fakeMongoBackend(mode),
    (backend, op, collection, when) => {
      (backend as FakeMongoBackend).db.faults.push({
        op,
        collection,
        when,
        error: new Error('connection reset'),
      });
    },
  );
}

// Open buckets kept as version 1 on the server from their second commit (the 5.x–7.x wire form of the
// 8.0 format's commits), compressed when they close: the engine's contract holds the same.
describeEngineSuite(
  "MongoStorage (buckets, openBucketForm 'uncompressed') over the driver fake",
  fakeMongoBackend('buckets', { openBucketForm: 'uncompressed' }),
);
