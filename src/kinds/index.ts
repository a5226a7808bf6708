// Every policy kind, by the module of its stage (policy/stages.ts POLICY_STAGES; the
// `errorPages` stage has no kind: error pages wrap forward and relay, proxy/pipeline/error-pages.ts).
// The stage set is fixed, so this list is too: a new kind is written in the module of its stage
// and is registered by that (docs/design.md, "Adding an ingress-nginx annotation"). The
// annotation families and the compiler write policies with these (`import * as K`), the
// registry (registry.ts) collects them for the proxy's runner. Two exports of one name would
// be a type error here.
export * from "./certificate.ts";
export * from "./server.ts";
export * from "./denied.ts";
export * from "./cors.ts";
export * from "./redirects.ts";
export * from "./rewrite.ts";
export * from "./backend.ts";
export * from "./limits.ts";
export * from "./access.ts";
export * from "./authentication.ts";
export * from "./forwarding.ts";
