import { runSinkConformance } from '../conformance.js';
import { webhookTarget } from '../targets/webhookTarget.js';
import { runCertificateCases, startOnce } from '../tlsCertificateCases.js';

const target = startOnce(webhookTarget({ tls: true }));
runSinkConformance(target);
runCertificateCases(target);
