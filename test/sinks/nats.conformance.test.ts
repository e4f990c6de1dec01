import { runSinkConformance } from './conformance.js';
import { natsTarget } from './targets/natsTarget.js';

runSinkConformance(natsTarget());
