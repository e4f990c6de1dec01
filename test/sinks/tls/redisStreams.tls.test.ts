import { runSinkConformance } from '../conformance.js';
import { redisStreamsTarget } from '../targets/redisStreamsTarget.js';
import { runCertificateCases, startOnce } from '../tlsCertificateCases.js';

const target = startOnce(redisStreamsTarget({ tls: true }));
runSinkConformance(target);
runCertificateCases(target);
