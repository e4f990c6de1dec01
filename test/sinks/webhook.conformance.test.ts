import { runSinkConformance } from './conformance.js';
import { webhookTarget } from './targets/webhookTarget.js';

runSinkConformance(webhookTarget());
