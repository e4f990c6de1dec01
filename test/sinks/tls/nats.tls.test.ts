import { runSinkConformance } from '../conformance.js';
import { natsTarget } from '../targets/natsTarget.js';
import { runCertificateCases, startOnce } from '../tlsCertificateCases.js';

const target = startOnce(natsTarget({ tls: true }));
runSinkConformance(target);
runCertificateCases(target);
