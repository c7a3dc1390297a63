import { memoryBackend } from './backends.js';
import { describeRollupSuite } from './rollups-suite.js';
import { describeEngineSuite, describeStorageSuite } from './storage-suite.js';

describeStorageSuite('MemoryStorage', memoryBackend);
describeEngineSuite('MemoryStorage', memoryBackend);
describeRollupSuite('MemoryStorage', memoryBackend);
