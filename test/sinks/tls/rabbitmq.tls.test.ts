import { runSinkConformance } from '../conformance.js';
import { rabbitmqTarget } from '../targets/rabbitmqTarget.js';
import { runCertificateCases, startOnce } from '../tlsCertificateCases.js';

const target = startOnce(rabbitmqTarget({ tls: true }));
runSinkConformance(target);
runCertificateCases(target);
