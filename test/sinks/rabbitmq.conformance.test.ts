import { runSinkConformance } from './conformance.js';
import { rabbitmqTarget } from './targets/rabbitmqTarget.js';

runSinkConformance(rabbitmqTarget());
