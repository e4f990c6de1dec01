import { runSinkConformance } from './conformance.js';
import { mqttTarget } from './targets/mqttTarget.js';

runSinkConformance(mqttTarget());
