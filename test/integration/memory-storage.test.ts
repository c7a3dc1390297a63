import { memoryBackend } from './backends.js';
import { describeEngineSuite, describeStorageSuite } from './storage-suite.js';

describeStorageSuite('MemoryStorage', memoryBackend);
describeEngineSuite('MemoryStorage', memoryBackend);
