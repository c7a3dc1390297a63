import { fakeMongoBackend } from './backends.js';
import { describeEngineSuite, describeStorageSuite } from './storage-suite.js';

for (const mode of ['timeseries', 'buckets'] as const) {
  describeStorageSuite(`MongoStorage (${mode}) over the driver fake`, fakeMongoBackend(mode));
  describeEngineSuite(`MongoStorage (${mode}) over the driver fake`, fakeMongoBackend(mode));
}
