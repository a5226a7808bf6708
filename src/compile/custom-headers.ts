// custom-headers: the ConfigMap an Ingress names, read into the response headers of its
// locations (docs/design.md "Annotations and policies", custom-headers). ingress-nginx
// (internal/ingress/annotations/customheaders/main.go) looks the value up as written in its
// ConfigMap store, keyed `namespace/name` (a bare name is never found), and denies the location
// (503) when it is missing, when a key is not `^[a-zA-Z\d\-_]+$`, when a value does not match
// its valueRegexp (non-empty, a fixed set of printable characters), or when a key is not listed
// in global-allowed-response-headers. nginx.tmpl then writes `more_set_headers "Name: value"`
// with `$` escaped (escapeLiteralDollar): the values are literal, never variables.
import { refuseStage } from "../annotations/access-stages.ts";
import { NGINX_HEADER_NAME } from "../annotations/external-auth.ts";
import { CUSTOM_HEADERS } from "../annotations/headers.ts";
import * as K from "../kinds/index.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { ConfigMap, Ingress } from "../model/schemas.ts";
import { stagePolicy } from "../policy/contract.ts";
import { checkHeader } from "../policy/headers.ts";
import type { StagePolicy } from "../policy/stages.ts";
import type { ParsedAnnotations } from "./annotations.ts";
import { findOwnConfigMap, replaceStage, type ConfigMapRead } from "./auth-headers.ts";
import { namespaceOf } from "./order.ts";

const NAME = CUSTOM_HEADERS.nginx[0] as string;
const NONE: ReadonlyMap<string, ConfigMap> = new Map();

/** customheaders' valueRegexp (its headerRegexp is NGINX_HEADER_NAME). */
const VALUE_RE = /^[a-zA-Z\d_ :;.,\\/"'?!(){}[\]@<>=\-+*#$&`|~^%]+$/;

export interface ResolvedCustomHeaders {
  readonly annotations: ParsedAnnotations;
  readonly diagnostics: readonly Diagnostic[];
  readonly configMap: ConfigMapRead | null;
}

/** The entries as `[name, value]` pairs (sorted, as Go's template ranges over a map), or why the location is denied. */
function readEntries(cm: ConfigMap, key: string, allowed: readonly string[]): [string, string][] | string {
  const data = cm.data ?? {};
  const out: [string, string][] = [];
  for (const name of Object.keys(data).sort()) {
    const value = data[name] as string;
    if (!NGINX_HEADER_NAME.test(name)) return `ConfigMap ${key} (${NAME}): ${JSON.stringify(name)} is not a header name (letters, digits, - and _)`;
    if (!VALUE_RE.test(value)) return `ConfigMap ${key} (${NAME}): the value of ${name} is empty or holds a character ingress-nginx refuses`;
    if (!allowed.includes(name)) return `ConfigMap ${key} (${NAME}): header ${name} is not listed in global-allowed-response-headers (--global-allowed-response-headers)`;
    const bad = checkHeader(name, value, "response");
    if (bad !== null) return `ConfigMap ${key} (${NAME}): ${bad}`;
    out.push([name, value]);
  }
  return out;
}

/**
 * `ann` with the entries of its custom-headers ConfigMap in its custom-headers stage, or that
 * stage replaced by a refusal (503) where ingress-nginx denies the location. Called where the
 * compiler parses an Ingress's annotations (plan.ts) and an IngressNginxPolicy's.
 */
export function resolveCustomHeaders(
  ann: ParsedAnnotations,
  ing: Pick<Ingress, "metadata">,
  allowed: readonly string[],
  configMaps: ReadonlyMap<string, ConfigMap> = NONE,
): ResolvedCustomHeaders {
  const stages = ann.options.stages ?? [];
  const waiting = stages.find((p) => p.kind === K.CUSTOM_HEADERS.id && (p.params as { headers?: unknown }).headers === null);
  const value = ann.policies.headers.customHeaders;
  if (waiting === undefined || value === null) return { annotations: ann, diagnostics: [], configMap: null };
  const ns = namespaceOf(ing as Ingress);
  const diagnostics: Diagnostic[] = [];
  const refuse = (message: string): StagePolicy => {
    diagnostics.push({ kind: "Ingress", namespace: ns, name: ing.metadata.name, reason: "InvalidAnnotation", message: `${message}; every path of the Ingress answers 503 until it is fixed`, severity: "error" });
    // ingress-nginx's "location denied" (ing_errors.NewLocationDenied): 503 there too.
    return refuseStage(`custom-headers: ${message}`, true);
  };
  let configMap: ConfigMapRead | null = null;
  let replacement: StagePolicy;
  const parts = value.split("/");
  if (parts.length === 2 && parts[0] !== ns && parts[0] !== "") {
    replacement = refuse(`annotation ${NAME}=${JSON.stringify(value)}: the ConfigMap is in another namespace than the Ingress, which is not allowed`);
  } else {
    const found = findOwnConfigMap(value, ns, NAME, configMaps);
    configMap = found.read;
    if (found.found === null) replacement = refuse(found.missing);
    else {
      const read = readEntries(found.found.object, found.found.key, allowed);
      replacement = typeof read === "string" ? refuse(read) : stagePolicy(K.CUSTOM_HEADERS, { headers: read });
    }
  }
  return { annotations: replaceStage(ann, waiting, replacement), diagnostics, configMap };
}
