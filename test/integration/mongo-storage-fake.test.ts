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
