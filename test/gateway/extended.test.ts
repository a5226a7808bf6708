// GATEWAY-HTTP Extended transcriptions on Portico's shared ports (test/gateway/extended.ts says how).
import { extendedSuite } from "./extended.ts";

extendedSuite("gateway-ext", false);
