// Host names and the upstream's identity for the routes of one Ingress: more names for its
// hosts (server-alias, applied across hosts by the compiler: compile/aliases.ts), the Host
// header sent upstream (upstream-vhost, "forwarding" stage in src/proxy/), and whether the
// Service's ClusterIP is the upstream (service-upstream, compile/backends.ts).
import * as v from "valibot";
import { normaliseHost } from "../model/hosts.ts";
import { normaliseRequestHost } from "../request/host.ts";
import type { AnnotationSpec, Family, Reader } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { Bool } from "./values.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";

export interface HostsPolicy {
  /** The Host header sent upstream instead of the client's; null = the client's. */
  readonly upstreamVhost: string | null;
  /** server-alias: more names, lowercased, deduplicated and sorted, as ingress-nginx lists them. */
  readonly aliases: readonly string[];
  /** service-upstream: the Service's ClusterIP:port instead of its endpoints. */
  readonly serviceUpstream: boolean;
  /** Why ingress-nginx would refuse the whole Ingress; null when it would not. */
  readonly denied: string | null;
}

const DENIED = "every path of this Ingress answers 503 (ingress-nginx refuses the whole Ingress)";
const IGNORED = "ignored: the upstream gets the client's Host";

export const SERVER_ALIAS: AnnotationSpec = {
  portico: "portico.dev/server-alias",
  nginx: [`${NGINX_PREFIX}server-alias`],
  family: "hosts",
  default: "none",
  description:
    "host names separated by commas, served as the Ingress's hosts are (every path of those hosts, whichever Ingress declared it); the first Ingress of a host that sets it counts; an alias that is an Ingress host, or an alias of an earlier host, is ignored with a diagnostic",
  compat: {
    kind: "differs",
    difference:
      "Names only: a regular expression (`~…`) or wildcard (`*.example.com`, `www.example.*`) alias, which nginx accepts, is an InvalidAnnotation and ignored. A plain-HTTP request for an alias is redirected to HTTPS when the host is in `spec.tls` (ingress-nginx: when a certificate covers the alias itself). A value with characters ingress-nginx refuses makes the Ingress's paths answer 503 (ingress-nginx rejects the Ingress).",
  },
};

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

export const SERVICE_UPSTREAM: AnnotationSpec = {
  portico: "portico.dev/service-upstream",
  nginx: [`${NGINX_PREFIX}service-upstream`],
  family: "hosts",
  default: "false",
  description:
    "`true`: send to the Service's ClusterIP and port (kube-proxy picks the pod; no retry on another pod) instead of its endpoints; a headless Service keeps its endpoints",
  compat: {
    kind: "differs",
    difference:
      "Each Ingress decides for its own paths. In ingress-nginx the first Ingress (oldest) that uses a Service port decides for every Ingress using that port, since they share one upstream. There is no global default (ingress-nginx: ConfigMap `service-upstream`, false as here).",
  },
};

// ingress-nginx's ValidateServerName (parser/validators.go, IsValidRegex): server-name
// characters plus regex ones, after trimming.
const NGINX_SERVER_NAME = /^[/\-._~a-zA-Z0-9:^$[\](){}*+?|&=\\]*$/;

const NONE: HostsPolicy = Object.freeze({ upstreamVhost: null, aliases: Object.freeze([]), serviceUpstream: false, denied: null });

/** upstream-vhost: the value, null (unset or ignored), or "denied". */
function readVhost(r: Reader): string | null | "denied" {
  const res = r.read(UPSTREAM_VHOST, v.string(), { empty: IGNORED, invalid: DENIED });
  if (res.state !== "ok") return res.state === "invalid" && !res.empty ? "denied" : null;
  const value = res.value.trim();
  const report = (why: string, then: string) => r.problem(`annotation ${res.name}=${JSON.stringify(res.raw)}: ${why}; ${then}`);
  if (!NGINX_SERVER_NAME.test(value)) {
    report("only A-Z a-z 0-9 and - . _ ~ / : ^ $ [ ] ( ) { } * + ? | & = \\ are allowed", DENIED);
    return "denied";
  }
  // ingress-nginx trims the value; nothing left is an absent value there. Portico sends no
  // nginx variables, and sends only a valid Host value (RFC 9110 §7.2: uri-host [":" port]).
  let why: string | null = null;
  if (value === "") why = "an empty value is invalid";
  else if (value.includes("$")) why = "nginx variables are not interpolated by Portico";
  else if (normaliseRequestHost(value) === null) why = "expected a host name or address, with an optional :port";
  if (why !== null) {
    report(why, IGNORED);
    return null;
  }
  return value;
}

/**
 * server-alias (alias/main.go): the comma-separated names trimmed, empty ones skipped,
 * deduplicated and sorted; every name must pass ValidateServerName or the Ingress is refused.
 * Names Portico cannot serve as nginx would (regular expressions, wildcards) are dropped
 * with a diagnostic.
 */
function readAliases(r: Reader): readonly string[] | "denied" {
  const res = r.read(SERVER_ALIAS, v.string(), { empty: "ignored", invalid: DENIED });
  if (res.state !== "ok") return res.state === "invalid" && !res.empty ? "denied" : NONE.aliases;
  const names = res.value.split(",").map((s) => s.trim());
  const bad = names.find((n) => !NGINX_SERVER_NAME.test(n));
  if (bad !== undefined) {
    r.problem(`annotation ${res.name}=${JSON.stringify(res.raw)}: ${JSON.stringify(bad)} has characters ingress-nginx refuses in a server name; ${DENIED}`);
    return "denied";
  }
  const out = new Set<string>();
  for (const n of names) {
    if (n === "") continue;
    const h = normaliseHost(n);
    if (!h.ok || h.host === null || h.host.startsWith("*.")) {
      r.problem(`annotation ${res.name}=${JSON.stringify(res.raw)}: alias ${JSON.stringify(n)} is not a host name (Portico serves no regular-expression or wildcard alias); that alias is ignored`);
      continue;
    }
    out.add(h.host);
  }
  if (out.size === 0) {
    if (!names.some((n) => n !== "")) r.problem(`annotation ${res.name}=${JSON.stringify(res.raw)}: an empty value is invalid; ignored`);
    return NONE.aliases;
  }
  return Object.freeze([...out].sort());
}

export const HOSTS: Family<HostsPolicy> = {
  name: "hosts",
  annotations: [SERVER_ALIAS, UPSTREAM_VHOST, SERVICE_UPSTREAM],
  none: NONE,
  stages: (p) => (p.upstreamVhost === null ? [] : [stagePolicy(K.UPSTREAM_VHOST, { host: p.upstreamVhost })]),
  parse(r) {
    const aliases = readAliases(r);
    const vhost = readVhost(r);
    // ingress-nginx's serviceupstream parser falls back to the default on any error.
    const serviceUpstream = r.value(SERVICE_UPSTREAM, Bool) ?? false;
    if (aliases === "denied" || vhost === "denied") {
      const which = aliases === "denied" ? "server-alias" : "upstream-vhost";
      return Object.freeze({ ...NONE, serviceUpstream, denied: `annotation ${which} is malformed` });
    }
    if (aliases.length === 0 && vhost === null && !serviceUpstream) return NONE;
    return Object.freeze({ upstreamVhost: vhost, aliases, serviceUpstream, denied: null });
  },
};
