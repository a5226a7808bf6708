// GATEWAY-HTTP Extended transcriptions with --gateway-ports: each Gateway asked at its own port,
// as a conformance run against Portico is set up (test/gateway/extended.ts says how).
import { extendedSuite } from "./extended.ts";

extendedSuite("gateway-ext-own", true);
