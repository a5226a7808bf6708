// HTTPRouteMultipleGateways (core) and HTTPRouteRedirectPortAndScheme (extended) with
// --gateway-ports, in one process: test/gateway/own-address.ts says how.
import { ownAddressSuite } from "./own-address.ts";

ownAddressSuite("gateway-multi", 1);
