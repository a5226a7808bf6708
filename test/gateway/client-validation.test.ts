// Gateway API frontend client certificate validation on Portico's shared ports (test/gateway/client-validation.ts says how).
import { clientValidationSuite } from "./client-validation.ts";

clientValidationSuite("gw-client-validation", false);
