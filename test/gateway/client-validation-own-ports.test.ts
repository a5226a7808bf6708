// Gateway API frontend client certificate validation with --gateway-ports: each Gateway port at
// its own Portico port, as a conformance run against Portico is set up (test/gateway/client-validation.ts says how).
import { clientValidationSuite } from "./client-validation.ts";

clientValidationSuite("gw-client-validation-own", true);
