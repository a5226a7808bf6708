// mirror-target, mirror-host and mirror-request-body: a copy of each request to another URL,
// its answer discarded (ingress-nginx's internal/ingress/annotations/mirror, nginx's `mirror`
// module; the proxy side is kinds/mirror.ts). Read as ingress-nginx reads them: a target that
// is not a URL with a scheme and a literal host mirrors nothing (there, its host is empty and
// template.go buildMirrorLocations writes no mirror location), a mirror-host that is not a
// host name falls back to the target's host name, and mirror-request-body is `off` or else
// `on`. None of them changes what the client gets: a bad value is a warning, never a refusal.
import * as v from "valibot";
import { fixedHostRefusal } from "../config/address-policy.ts";
import * as K from "../kinds/index.ts";
import { MIRROR_VARIABLES } from "../kinds/mirror.ts";
import { stagePolicy } from "../policy/contract.ts";
import { parseTemplate, type TemplatePart } from "../policy/template.ts";
import type { AnnotationSpec, Family } from "./spec.ts";
import { NGINX_PREFIX } from "./spec.ts";

export type MirrorPolicy =
  | { readonly on: false }
  | { readonly on: true; readonly url: readonly TemplatePart[]; readonly path: boolean; readonly host: string; readonly body: boolean };

const NO_MIRROR = "no request is mirrored";

export const MIRROR_TARGET: AnnotationSpec = {
  portico: "portico.dev/mirror-target",
  nginx: [`${NGINX_PREFIX}mirror-target`],
  family: "mirror",
  default: "none",
  description:
    "`http(s)://host[:port][/path]`, variables `$request_uri`, `$uri`, `$args`, `$is_args`, `$query_string`, `$host`, `$http_host`, `$scheme`, `$request_method` after the host: a copy of each request goes there, its answer discarded; the client's answer never waits for it",
  compat: {
    kind: "differs",
    difference:
      "The copy is sent only to an address the auth-url policy allows (never loopback, link-local, unspecified, cloud metadata or this pod's own addresses: `http://localhost/...` mirrors nothing, with a warning); at most 256 copies are in flight per process and 30 s each, beyond which a copy is dropped. A target without a path gets the request's own path and query (ingress-nginx sends its internal `/_mirror-<uid>`); a rendered path starting `//` (`https://host/$request_uri`) is sent as rendered, as nginx sends it. A request with a body is mirrored only when its body was read whole (request buffering, within `--request-buffer-size`, and at most 16 MiB of bodies held by copies); a larger body, or any with `proxy-request-buffering: off`, streams and the request is not mirrored.",
  },
};

export const MIRROR_HOST: AnnotationSpec = {
  portico: "portico.dev/mirror-host",
  nginx: [`${NGINX_PREFIX}mirror-host`],
  family: "mirror",
  default: "the target's host name",
  description: "the Host field of the copies",
  compat: { kind: "same" },
};

export const MIRROR_REQUEST_BODY: AnnotationSpec = {
  portico: "portico.dev/mirror-request-body",
  nginx: [`${NGINX_PREFIX}mirror-request-body`],
  family: "mirror",
  default: "on",
  description: "`off`: copies go without the request body; anything else: with it",
  compat: {
    kind: "differs",
    difference: "With `off` the copy carries neither the body nor its Content-Length (nginx still sends the client's Content-Length with no body after it). Any other value is served the same (the copy then carries the body as `mirror-target` says).",
  },
  sameWhen: (value) => value.trim() !== "off",
};

// ingress-nginx's parser.StringToURL on the target up to its first "$" (mirror/main.go): a
// scheme, a host, no ".." in it. Portico also wants http or https, which is all proxy_pass takes.
const HEAD = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([\s\S]*)$/;
// A Host field value: a name or an IP literal, and a port.
const HOST_FIELD = /^(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

const Trimmed = v.pipe(v.string(), v.trim());

const NONE: MirrorPolicy = Object.freeze({ on: false });

export const MIRROR: Family<MirrorPolicy> = {
  name: "mirror",
  annotations: [MIRROR_TARGET, MIRROR_HOST, MIRROR_REQUEST_BODY],
  none: NONE,
  stages: (m) => (m.on ? [stagePolicy(K.INGRESS_MIRROR, { url: [...m.url], path: m.path, host: m.host, body: m.body })] : []),
  parse(r) {
    const read = r.read(MIRROR_TARGET, Trimmed, NO_MIRROR);
    const bodyText = r.value(MIRROR_REQUEST_BODY, Trimmed);
    const hostRead = r.read(MIRROR_HOST, v.pipe(Trimmed, v.regex(HOST_FIELD, "expected a host name or address, and a port")), "the target's host name is used");
    if (read.state !== "ok") return NONE;
    const text = read.value;
    const bad = (why: string): MirrorPolicy => {
      r.problem(`annotation ${read.name}=${JSON.stringify(read.raw)}: ${why}; ${NO_MIRROR}`);
      return NONE;
    };
    const t = parseTemplate(text, (name) => MIRROR_VARIABLES.has(name));
    if (!t.ok) return bad(t.why);
    const literal = text.split("$")[0] as string;
    const m = HEAD.exec(literal);
    if (m === null || m[2] === "") return bad("expected a URL with a scheme and a host before any variable");
    const scheme = (m[1] as string).toLowerCase();
    if (scheme !== "http" && scheme !== "https") return bad(`scheme ${m[1]} is not http or https`);
    if ((m[2] as string).includes("..")) return bad("invalid host");
    let hostname: string;
    try {
      hostname = new URL(`${scheme}://${m[2]}/`).hostname;
    } catch {
      return bad("the host is not a host name or address");
    }
    // A variable inside the authority would let the client pick where the copy goes: one
    // may follow the host directly only when its value starts with "/" ($request_uri, $uri).
    const first = t.parts.find((p) => typeof p !== "string");
    if (first !== undefined && m[3] === "" && typeof first !== "string" && first.v !== "request_uri" && first.v !== "uri") return bad("a variable other than $request_uri or $uri must come after a / following the host");
    const refused = fixedHostRefusal(hostname);
    if (refused !== null) return bad(`the address ${hostname} is refused (${refused}): Portico never connects to it`);
    const host = hostRead.state === "ok" ? hostRead.value : hostname;
    return Object.freeze({ on: true, url: Object.freeze(t.parts), path: m[3] !== "", host, body: bodyText !== "off" });
  },
};
