import { BucketEngine } from '../src/index.js';
import { MemoryStorage } from '../src/storage/memory-storage.js';
class S extends MemoryStorage { override async updateOne(ns: string, f: any, u: any) { try { return await super.updateOne(ns, f, u); } catch (e) { console.log(e, JSON.stringify(u)); throw e; } } }
const engine = new BucketEngine({ storage: new S() });
const coll = await engine.createCollection('w', { timeseries: { timeField: 'ts', metaField: 'sensor' } });
const doc = JSON.parse('{"__proto__": {"polluted": 1}, "constructor": 2, "$x": 3, "a.b": 4}');
await coll.insertOne({ ts: new Date(0), sensor: 1, ...doc });
try { await coll.insertOne({ ts: new Date(1), sensor: 1, ...doc }); } catch (e) { console.log(e); }
