// The same with two worker processes: the Gateways' ports, their tables and their certificate
// sets cross the worker wire, and both workers listen on each port (SO_REUSEPORT).
import { ownAddressSuite } from "./own-address.ts";

ownAddressSuite("gateway-multi-workers", 2);
