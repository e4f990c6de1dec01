import { runSinkConformance } from '../conformance.js';
import { mqttTarget } from '../targets/mqttTarget.js';
import { runCertificateCases, startOnce } from '../tlsCertificateCases.js';

const target = startOnce(mqttTarget({ tls: true }));
runSinkConformance(target);
runCertificateCases(target);
