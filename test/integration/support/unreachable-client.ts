/**
 * Run by mongo-unreachable.test.ts in its own process: an engine over MongoStorage whose client was never
 * connected and whose server refuses connections. Prints the outcome of the first call as JSON; the
 * process must not exit before the call settles.
 */
import { MongoClient } from 'mongodb';

import { BucketEngine, TimeseriesError } from '../../../src/index.js';
import { MongoStorage } from '../../../src/mongodb/index.js';

// Port 1 on the loopback interface: nothing listens, the connection is refused at once.
const client = new MongoClient('mongodb://127.0.0.1:1/?directConnection=true', {
  serverSelectionTimeoutMS: 200,
});
const storage = new MongoStorage(client.db('unreachable'), { retry: { maxRetries: 2, initialDelayMs: 200 } });
const engine = new BucketEngine({ storage, ttlMonitor: 'disabled' });
try {
  const coll = await engine.createCollection('c', { timeseries: { timeField: 't' } });
  await coll.insertOne({ t: new Date() });
  console.log(JSON.stringify({ outcome: 'resolved' }));
} catch (error) {
  console.log(
    JSON.stringify({
      outcome: 'rejected',
      codeName: TimeseriesError.isTimeseriesError(error) ? error.codeName : 'untyped',
      message: error instanceof Error ? error.message : String(error),
    }),
  );
} finally {
  await client.close();
}
