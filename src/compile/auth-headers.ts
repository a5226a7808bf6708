// auth-proxy-set-headers: the ConfigMap an Ingress names, read into the headers of its auth
// request (docs/design.md "External authentication"). ingress-nginx (authreq/main.go at
// dbb11b92) splits the value as a `namespace/name` key (more than one `/` denies the
// location), refuses another namespace than the Ingress's (allow-cross-namespace-resources
// is off by default since v1.12 and Portico has no such switch), then looks the value up *as
// written* in its ConfigMap store, whose keys are `namespace/name`: a bare name is never found.
// A ConfigMap that is missing, or with a key that is no header name (authreq's headerRegexp
// `^[a-zA-Z\d\-_]+$`), denies the location: 503 on every path. Each entry becomes
// `proxy_set_header "NAME" "VALUE";` in the auth location (template.go
// buildAuthProxySetHeaders, lines sorted), so nginx expands variables in the values: Portico
// expands the same list auth-cache-key and auth-signin accept, and refuses the route (503)
// for any other, as for what cannot be written safely into a field (a control character).
import { AUTH_PROXY_SET_HEADERS, NGINX_HEADER_NAME } from "../annotations/external-auth.ts";
import { refuseStage } from "../annotations/access-stages.ts";
import type { Diagnostic } from "../model/diagnostic.ts";
import type { ConfigMap, Ingress } from "../model/schemas.ts";
import { ownNamespaceKey } from "../model/secret-refs.ts";
import { stagePolicy, type ParamsOf } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";
import { AUTH_REQUEST_OWN_FIELDS, headerVariableAllowed, headerVariableNames } from "../kinds/external-auth.ts";
import { ASCII_FIELD_VALUE } from "../policy/headers.ts";
import type { StagePolicy } from "../policy/stages.ts";
import { parseTemplate, type TemplatePart } from "../policy/template.ts";
import type { ParsedAnnotations } from "./annotations.ts";
import { namespaceOf } from "./order.ts";
import { assembleStages } from "./stages.ts";

/** The ConfigMap read (undefined: absent), so the compiler plans the Ingress again when it is another object. */
export interface ConfigMapRead {
  readonly key: string;
  readonly object: ConfigMap | undefined;
}

export interface ResolvedHeaders {
  readonly annotations: ParsedAnnotations;
  readonly diagnostics: readonly Diagnostic[];
  readonly configMap: ConfigMapRead | null;
}

const NAME = AUTH_PROXY_SET_HEADERS.nginx[0] as string;
const NONE: ReadonlyMap<string, ConfigMap> = new Map();

/**
 * An annotation's ConfigMap looked up as ingress-nginx does, by the value as written as a
 * namespace/name key (ownNamespaceKey, only in the Ingress's namespace): the object found, or
 * why none was; `read` is what the compiler watches (null: the value names no key).
 */
export function findOwnConfigMap(
  value: string,
  ns: string,
  annotation: string,
  configMaps: ReadonlyMap<string, ConfigMap>,
): { read: ConfigMapRead | null; found: { key: string; object: ConfigMap } | null; missing: string } {
  const key = ownNamespaceKey(value, ns);
  const object = key === null ? undefined : configMaps.get(key);
  const read = key === null ? null : { key, object };
  if (key !== null && object !== undefined) return { read, found: { key, object }, missing: "" };
  const hint = key === null ? `: ingress-nginx looks the value up as written, as a namespace/name key, so a ConfigMap is found only as ${ns}/${value.split("/").at(-1) || "<name>"}` : "";
  return { read, found: null, missing: `ConfigMap ${JSON.stringify(value)} (${annotation}) not found${hint}` };
}

/** `ann` with the stage `waiting` replaced by `replacement` (the resolved or refused one). */
export function replaceStage(ann: ParsedAnnotations, waiting: StagePolicy, replacement: StagePolicy): ParsedAnnotations {
  const stages = ann.options.stages ?? [];
  const options = Object.freeze({ ...ann.options, stages: assembleStages(stages.map((p) => (p === waiting ? replacement : p))) });
  return Object.freeze({ ...ann, options });
}

type Entry = { readonly name: string; readonly value: TemplatePart[] };

/** The entries of `cm` as headers, the entries left out (with why), or why the ConfigMap refuses the route. */
function readEntries(cm: ConfigMap, key: string): { entries: Entry[]; skipped: string[] } | string {
  const entries: Entry[] = [];
  const skipped: string[] = [];
  // buildAuthProxySetHeaders sorts the lines it writes; nginx sends them in that order.
  for (const name of Object.keys(cm.data ?? {}).sort()) {
    const value = (cm.data ?? {})[name] as string;
    if (!NGINX_HEADER_NAME.test(name)) return `ConfigMap ${key} (${NAME}): ${JSON.stringify(name)} is not a header name (letters, digits, - and _), which ingress-nginx refuses too`;
    if (!ASCII_FIELD_VALUE.test(value)) return `ConfigMap ${key} (${NAME}): the value of ${name} holds a character that cannot be sent in a header field (a control character or non-ASCII)`;
    const t = parseTemplate(value, (v) => headerVariableAllowed(v, false));
    if (!t.ok) return `ConfigMap ${key} (${NAME}): the value of ${name}: ${t.why} (variables: $${headerVariableNames(false).join(", $")}, $http_<name>, $cookie_<name>, $arg_<name>)`;
    const lower = name.toLowerCase();
    if (AUTH_REQUEST_OWN_FIELDS.has(lower)) {
      skipped.push(`ConfigMap ${key} (${NAME}): ${name} is left out: the auth request sets it itself (nginx would send both fields)`);
      continue;
    }
    entries.push({ name: lower, value: t.parts });
  }
  return { entries, skipped };
}

/**
 * `ann` with the headers of its auth-proxy-set-headers ConfigMap in its external-auth stage,
 * or that stage replaced by a refusal (503) when the ConfigMap cannot be used. Called where
 * the compiler parses an Ingress's annotations, before compile/access.ts.
 */
export function resolveAuthHeaders(ann: ParsedAnnotations, ing: Pick<Ingress, "metadata">, configMaps: ReadonlyMap<string, ConfigMap> = NONE): ResolvedHeaders {
  const stages = ann.options.stages ?? [];
  const waiting = stages.find((p) => p.kind === K.EXTERNAL_AUTH.id && (p.params as { proxySetHeaders?: unknown }).proxySetHeaders === null);
  const value = ann.policies.externalAuth.headersConfigMap;
  if (waiting === undefined || value === null) return { annotations: ann, diagnostics: [], configMap: null };
  const ns = namespaceOf(ing as Ingress);
  const diagnostics: Diagnostic[] = [];
  const diag = (message: string, severity: "warning" | "error") => diagnostics.push({ kind: "Ingress", namespace: ns, name: ing.metadata.name, reason: "InvalidAnnotation", message, severity });
  let configMap: ConfigMapRead | null = null;
  let replacement: StagePolicy;
  const refuse = (message: string) => {
    diag(`${message}; every path of the Ingress answers 503 until it is fixed`, "error");
    // ingress-nginx's "location denied" for each of these too.
    return refuseStage(`external authentication: ${message}`, true);
  };
  const parts = value.split("/");
  if (parts.length > 2) replacement = refuse(`annotation ${NAME}=${JSON.stringify(value)}: not a ConfigMap name (namespace/name)`);
  else if (parts.length === 2 && parts[0] !== ns) replacement = refuse(`annotation ${NAME}=${JSON.stringify(value)}: the ConfigMap is in another namespace than the Ingress, which is not allowed`);
  else {
    const found = findOwnConfigMap(value, ns, NAME, configMaps);
    configMap = found.read;
    if (found.found === null) replacement = refuse(found.missing);
    else {
      const read = readEntries(found.found.object, found.found.key);
      if (typeof read === "string") replacement = refuse(read);
      else {
        for (const s of read.skipped) diag(s, "warning");
        replacement = stagePolicy(K.EXTERNAL_AUTH, { ...(waiting.params as ParamsOf<typeof K.EXTERNAL_AUTH>), proxySetHeaders: read.entries });
      }
    }
  }
  return { annotations: replaceStage(ann, waiting, replacement), diagnostics, configMap };
}
