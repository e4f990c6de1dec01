import { runSinkConformance } from './conformance.js';
import { redisStreamsTarget } from './targets/redisStreamsTarget.js';

runSinkConformance(redisStreamsTarget());
