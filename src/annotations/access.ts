// Source ranges: which client addresses may reach the routes of one Ingress (ingress-nginx's
// allowlist-source-range / denylist-source-range, its `deny`/`allow` directives). The compiler
// merges the --allowlist-source-range / --denylist-source-range lists in (compile/access.ts)
// and the proxy checks the client address (proxy/source-range.ts). Access control fails
// closed: a list that cannot be read makes the route refuse every request, never serve open.
import * as v from "valibot";
import { isIpv4MappedRange, parseCidrList } from "../config/cidr.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";
import { REFUSED_STATUS, refuseStage, sourceRangeStage } from "./access-stages.ts";

export interface SourceRangePolicy {
  /** Canonical CIDRs from the annotation; null when it is not set (the flag's list applies). */
  readonly allow: readonly string[] | null;
  readonly deny: readonly string[] | null;
  /** Why the routes refuse every request (an unreadable list), or null. */
  readonly invalid: string | null;
  /**
   * `satisfy`: "all" (nginx's default: the source ranges and the authentication must each let
   * the request in) or "any" (one that lets it in suffices; compile/access.ts folds the checks
   * into one satisfy-any policy, kinds/satisfy.ts).
   */
  readonly satisfy: "all" | "any";
}


const REFUSE = `every path of the Ingress answers ${REFUSED_STATUS} until it is fixed`;

/**
 * The difference left for a list Portico read: the client address. The Ingress's own list
 * replaces the global one in both, and a bad list is reported as such, so neither is said.
 */
const CLIENT_ADDRESS =
  "The client address is the peer, or the `X-Forwarded-For` address only from a peer in `--trusted-proxies` (ingress-nginx: the peer unless `use-forwarded-headers`/`enable-real-ip`); a client address that is not an IP is refused.";


/** Comma-separated CIDRs or addresses (a bare address is a /32 or /128), as ingress-nginx reads them. */
export const CidrList: v.GenericSchema<string, readonly string[]> = v.pipe(
  v.string(),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const r = parseCidrList(dataset.value);
    if (!r.ok) {
      addIssue({ message: `expected IPv4/IPv6 CIDRs or addresses separated by commas; ${r.error}` });
      return NEVER;
    }
    if (r.list.length === 0) {
      addIssue({ message: "expected at least one CIDR or address" });
      return NEVER;
    }
    // An IPv4-mapped IPv6 range (::ffff:a.b.c.d/n, n >= 96) matches no client under nginx: an
    // IPv4 client, or a mapped one, is checked against the IPv4 rules only
    // (ngx_http_access_module), and an ingress-nginx allow list always has one (`deny all`).
    // Refused, rather than silently never matching what the user meant.
    const mapped = r.list.find(isIpv4MappedRange);
    if (mapped !== undefined) {
      addIssue({ message: `${mapped} is an IPv4-mapped IPv6 range, which nginx matches against no client; write it as IPv4` });
      return NEVER;
    }
    return r.list;
  }),
);

export const ALLOWLIST_SOURCE_RANGE: AnnotationSpec = {
  portico: "portico.dev/allowlist-source-range",
  nginx: [`${NGINX_PREFIX}allowlist-source-range`, `${NGINX_PREFIX}whitelist-source-range`],
  family: "access",
  default: "--allowlist-source-range",
  description:
    "comma-separated CIDRs or addresses; a client outside them gets 403; replaces `--allowlist-source-range` for this Ingress",
  compat: {
    kind: "differs",
    difference:
      "The client address is the peer, or the `X-Forwarded-For` address only from a peer in `--trusted-proxies` (ingress-nginx: the peer unless `use-forwarded-headers`/`enable-real-ip`); a client address that is not an IP is refused; an IPv4-mapped IPv6 range (`::ffff:10.0.0.0/104`) is refused like a bad CIDR (nginx matches it against no client); the global list is the flag (ingress-nginx: ConfigMap `whitelist-source-range`). Like ingress-nginx, a bad or empty list answers 503 on every path.",
  },
  differenceFor: () => CLIENT_ADDRESS,
};

export const DENYLIST_SOURCE_RANGE: AnnotationSpec = {
  portico: "portico.dev/denylist-source-range",
  nginx: [`${NGINX_PREFIX}denylist-source-range`],
  family: "access",
  default: "--denylist-source-range",
  description:
    "comma-separated CIDRs or addresses refused with 403, checked before the allow list (deny wins); replaces `--denylist-source-range` for this Ingress",
  compat: {
    kind: "differs",
    difference: "Same client address and list rules as `allowlist-source-range`; the global list is the flag (ingress-nginx: ConfigMap `denylist-source-range`).",
  },
  differenceFor: () => CLIENT_ADDRESS,
};

/**
 * ingress-nginx's satisfy parser (annotations/satisfy/main.go): the trimmed value `any` or
 * `all`; anything else is dropped and nginx's default, `all`, applies (the route is served).
 */
const SatisfyValue = v.pipe(v.string(), v.trim(), v.picklist(["any", "all"], "expected any or all"));

export const SATISFY: AnnotationSpec = {
  portico: "portico.dev/satisfy",
  nginx: [`${NGINX_PREFIX}satisfy`],
  family: "access",
  default: "all",
  description:
    "`any`: the request goes on when the source ranges or the authentication (basic or `auth-url`) let it in; `all`: each must",
  compat: { kind: "same" },
};

const NONE: SourceRangePolicy = Object.freeze({ allow: null, deny: null, invalid: null, satisfy: "all" });

export const ACCESS: Family<SourceRangePolicy> = {
  name: "access",
  annotations: [ALLOWLIST_SOURCE_RANGE, DENYLIST_SOURCE_RANGE, SATISFY],
  none: NONE,
  // ingress-nginx denies the location (503) for an unreadable list too.
  stages: (a) => {
    if (a.invalid !== null) return [refuseStage(a.invalid, true)];
    const s = sourceRangeStage(a.allow, a.deny);
    return s === null ? [] : [s];
  },
  parse(r) {
    const allow = r.read(ALLOWLIST_SOURCE_RANGE, CidrList, REFUSE);
    const deny = r.read(DENYLIST_SOURCE_RANGE, CidrList, REFUSE);
    const satisfy = r.value(SATISFY, SatisfyValue) ?? "all";
    if (allow.state === "unset" && deny.state === "unset" && satisfy === "all") return NONE;
    // ingress-nginx denies the location (503) when either list is bad: so does Portico.
    const invalid =
      allow.state === "invalid" ? "allowlist-source-range is invalid" : deny.state === "invalid" ? "denylist-source-range is invalid" : null;
    return Object.freeze({
      allow: allow.state === "ok" ? allow.value : null,
      deny: deny.state === "ok" ? deny.value : null,
      invalid,
      satisfy,
    });
  },
};
