// Host names and the upstream's identity for the routes of one Ingress: the Host header sent
// upstream (upstream-vhost). The proxy applies it where it builds the upstream request
// (src/proxy/policies.ts, "forwarding" stage).
import * as v from "valibot";
import { normaliseRequestHost } from "../request/host.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";

export interface HostsPolicy {
  /** The Host header sent upstream instead of the client's; null = the client's. */
  readonly upstreamVhost: string | null;
  /** Why ingress-nginx would refuse the whole Ingress; null when it would not. */
  readonly denied: string | null;
}

const IGNORED = "ignored: the upstream gets the client's Host";

export const UPSTREAM_VHOST: AnnotationSpec = {
  portico: "portico.dev/upstream-vhost",
  nginx: [`${NGINX_PREFIX}upstream-vhost`],
  family: "hosts",
  default: "the client's Host",
  description:
    "`host` or `host:port`: the Host header sent to the pods (X-Forwarded-Host keeps the client's); no nginx variables",
  compat: {
    kind: "differs",
    difference:
      "nginx variables (`$host`, `$service_name`, …), which ingress-nginx interpolates, are not: a value with `$` is an InvalidAnnotation and ignored, as is any value that is not a host name or address with an optional port. A value with characters ingress-nginx refuses makes the Ingress's paths answer 503 (ingress-nginx rejects the Ingress).",
  },
};

// ingress-nginx's ValidateServerName (parser/validators.go, IsValidRegex): server-name
// characters plus regex ones, after trimming.
const NGINX_SERVER_NAME = /^[/\-._~a-zA-Z0-9:^$[\](){}*+?|&=\\]*$/;

const NONE: HostsPolicy = Object.freeze({ upstreamVhost: null, denied: null });

export const HOSTS: Family<HostsPolicy> = {
  name: "hosts",
  annotations: [UPSTREAM_VHOST],
  none: NONE,
  parse(r) {
    const denied = "every path of this Ingress answers 503 (ingress-nginx refuses the whole Ingress)";
    const res = r.read(UPSTREAM_VHOST, v.string(), { empty: IGNORED, invalid: denied });
    if (res.state !== "ok") {
      return res.state === "invalid" && !res.empty ? Object.freeze({ upstreamVhost: null, denied: "annotation upstream-vhost is malformed" }) : NONE;
    }
    const value = res.value.trim();
    const report = (why: string, then: string) => r.problem(`annotation ${res.name}=${JSON.stringify(res.raw)}: ${why}; ${then}`);
    if (!NGINX_SERVER_NAME.test(value)) {
      report("only A-Z a-z 0-9 and - . _ ~ / : ^ $ [ ] ( ) { } * + ? | & = \\ are allowed", denied);
      return Object.freeze({ upstreamVhost: null, denied: "annotation upstream-vhost is malformed" });
    }
    // ingress-nginx trims the value; nothing left is an absent value there. Portico sends no
    // nginx variables, and sends only a valid Host value (RFC 9110 §7.2: uri-host [":" port]).
    let why: string | null = null;
    if (value === "") why = "an empty value is invalid";
    else if (value.includes("$")) why = "nginx variables are not interpolated by Portico";
    else if (normaliseRequestHost(value) === null) why = "expected a host name or address, with an optional :port";
    if (why !== null) {
      report(why, IGNORED);
      return NONE;
    }
    return Object.freeze({ upstreamVhost: value, denied: null });
  },
};
