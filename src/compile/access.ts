// The one compile step of the access annotations (docs/design.md, "Annotations and policies"):
// what they need from outside the Ingress. The --allowlist-source-range /
// --denylist-source-range lists apply where the Ingress sets no list of that kind (an
// annotation replaces only the flag of its own kind, as in ingress-nginx), and the basic-auth
// Secret is read into the users. Whatever cannot be resolved makes the routes refuse every
// request (503, ingress-nginx's "location denied"), with a diagnostic: never open.
import { X509Certificate } from "node:crypto";
import { basicAuthStage, CA_UNREADABLE_STATUS, clientCertStage, RESOLVED_STAGE_KINDS, refuseStage, sourceRangeStage } from "../annotations/access-stages.ts";
import { usersFromFile, usersFromMap, type ReadUsers } from "../policy/htpasswd.ts";
import type { Diagnostic, DiagnosticReason } from "../model/diagnostic.ts";
import type { Ingress, Secret } from "../model/schemas.ts";
import { namespaceOf } from "./order.ts";
import type { StagePolicy } from "../policy/stages.ts";
import { assembleStages } from "./stages.ts";
import type { ParsedAnnotations } from "./annotations.ts";
import type { CompileConfig } from "./config.ts";
import { stagePolicy } from "../policy/contract.ts";
import * as K from "../kinds/index.ts";
import { SATISFY_KINDS } from "../kinds/satisfy.ts";

export interface ResolvedAccess {
  /** `ann` with its access and authentication stages complete. */
  readonly annotations: ParsedAnnotations;
  readonly diagnostics: readonly Diagnostic[];
  /**
   * The basic-auth Secret this depends on (`namespace/name`) and the object read (undefined:
   * absent), or null: the compiler resolves again when the snapshot holds another object.
   */
  readonly secret: SecretRead | null;
  /** The client-certificate CA Secret read, as `secret` is for basic auth. */
  readonly caSecret: SecretRead | null;
  /**
   * The client-certificate policy this Ingress offers its hosts, or null: none (or an invalid
   * one, which parse.ts refused for this Ingress's own paths only). ingress-nginx sets it on
   * the whole server block, so the compiler applies the first one of each host to every path
   * of that host (host-entry.ts, hostCertOf).
   */
  readonly hostCert: HostCert | null;
}

/**
 * A host-wide client-certificate stage: the `client-cert` policy, or (`error`) the 403 refusal
 * of a CA Secret that cannot be used (ingress-nginx's server-level AuthTLSError). The stage
 * object is also in the Ingress's own options, where host-entry.ts finds it by identity.
 */
export interface HostCert {
  readonly stage: StagePolicy;
  readonly error: boolean;
}

export interface SecretRead {
  readonly key: string;
  readonly object: Secret | undefined;
}

/** What of the compile config the access annotations read: the global source-range flags. */
// globalAllowedResponseHeaders rides along for an IngressNginxPolicy's custom-headers
// (gateway/extension.ts); absent: none allowed.
export type AccessFlags = Pick<CompileConfig, "allowlistSourceRange" | "denylistSourceRange"> & Partial<Pick<CompileConfig, "globalAllowedResponseHeaders">>;

// Ingresses without basic auth share their result per (annotations, config): most have none.
const shared = new WeakMap<AccessFlags, WeakMap<ParsedAnnotations, ResolvedAccess>>();

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A Secret value's bytes as a latin1 string (users and hashes are bytes), or null when `data` is not base64. */
function valueOf(secret: Secret, key: string): string | null | undefined {
  const plain = secret.stringData?.[key];
  // stringData (--manifests files only) is text: the API server would store its UTF-8 bytes.
  if (plain !== undefined) return Buffer.from(plain, "utf8").toString("latin1");
  const b64 = secret.data?.[key];
  if (b64 === undefined) return undefined;
  return BASE64.test(b64) ? Buffer.from(b64, "base64").toString("latin1") : null;
}

type Problem = { reason: DiagnosticReason; message: string; severity: "warning" | "error" };

/** The users of `secret` for `type`, or why none can be read. */
function readSecret(secret: Secret, key: string, type: "auth-file" | "auth-map"): ReadUsers | string {
  if (type === "auth-file") {
    const text = valueOf(secret, "auth");
    if (text === undefined) return `Secret ${key} has no key "auth" (auth-secret-type auth-file)`;
    if (text === null) return `the "auth" value of Secret ${key} is not valid base64`;
    return usersFromFile(text);
  }
  const names = new Set([...Object.keys(secret.data ?? {}), ...Object.keys(secret.stringData ?? {})]);
  const entries: [string, string][] = [];
  for (const name of [...names].sort()) {
    const value = valueOf(secret, name);
    if (value === null) return `the value of user ${JSON.stringify(name)} in Secret ${key} is not valid base64`;
    if (value !== undefined) entries.push([name, value]);
  }
  return usersFromMap(entries);
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n]+-----END CERTIFICATE-----/g;

/**
 * The CA certificates of `ca.crt` (PEM, each one parsed), or why there are none. A block that
 * does not parse is a reason to refuse: the CA list would otherwise be narrower than written,
 * and nginx fails to load such a file as a whole.
 */
function readCa(secret: Secret, key: string): string[] | string {
  const text = valueOf(secret, "ca.crt");
  if (text === undefined) return `Secret ${key} has no key "ca.crt" (auth-tls-secret)`;
  if (text === null) return `the "ca.crt" value of Secret ${key} is not valid base64`;
  const blocks = text.match(PEM_CERT) ?? [];
  if (blocks.length === 0) return `"ca.crt" of Secret ${key} holds no PEM certificate`;
  const out: string[] = [];
  for (const pem of blocks) {
    try {
      out.push(new X509Certificate(pem).toString());
    } catch {
      return `"ca.crt" of Secret ${key} holds a certificate that does not parse`;
    }
  }
  return out;
}

const SATISFY_ORDER: readonly string[] = SATISFY_KINDS.map((k) => k.id);

/**
 * `satisfy: any`: the route's source-range, basic-auth and external-auth policies become the
 * checks of one satisfy-any policy (kinds/satisfy.ts), in nginx's access-phase order. Called
 * once every one of them is complete (after resolveAccess and the global auth-url, which
 * nginx.tmpl writes as the same auth_request: compile/plan.ts), so none is left out. With
 * fewer than two there is nothing to choose between, and the policies stay as they are. A
 * refusal (an unreadable list or Secret) is not a check: it stays in its own stage and still
 * refuses every request.
 */
export function satisfyAny(ann: ParsedAnnotations): ParsedAnnotations {
  if (ann.policies.access.satisfy !== "any") return ann;
  const stages = ann.options.stages ?? [];
  const checks = stages.filter((p) => SATISFY_ORDER.includes(p.kind));
  if (checks.length < 2) return ann;
  checks.sort((a, b) => SATISFY_ORDER.indexOf(a.kind) - SATISFY_ORDER.indexOf(b.kind));
  const folded = stagePolicy(K.SATISFY_ANY, { checks: checks.map((p) => ({ kind: p.kind, params: p.params })) });
  const options = Object.freeze({ ...ann.options, stages: assembleStages(stages.filter((p) => !checks.includes(p)), folded) });
  return Object.freeze({ ...ann, options });
}

/**
 * `ann`, parsed from `ing`'s annotations, completed with the flags' source ranges and the
 * basic-auth users from `secrets`. Called where the compiler parses an Ingress's annotations.
 */
export function resolveAccess(ann: ParsedAnnotations, ing: Pick<Ingress, "metadata">, secrets: ReadonlyMap<string, Secret>, config: AccessFlags): ResolvedAccess {
  const auth = ann.policies.basicAuth;
  const global = config.allowlistSourceRange.length > 0 || config.denylistSourceRange.length > 0;
  const certs = ann.policies.clientCerts;
  if (auth.state !== "basic" && certs.state !== "on" && !global) return { annotations: ann, diagnostics: [], secret: null, caSecret: null, hostCert: null };
  let byAnn = shared.get(config);
  const cacheable = auth.state !== "basic" && certs.state !== "on";
  if (cacheable) {
    const hit = byAnn?.get(ann);
    if (hit !== undefined) return hit;
  }

  const ns = namespaceOf(ing as Ingress);
  const problems: Problem[] = [];
  // parse.ts already refused an invalid list or basic-auth configuration (and every other
  // refusal stays as it made it); only the stages whose inputs lie outside the Ingress are rebuilt.
  const stages: StagePolicy[] = (ann.options.stages ?? []).filter((p) => !RESOLVED_STAGE_KINDS.has(p.kind));
  const access = ann.policies.access;
  if (access.invalid === null) {
    const s = sourceRangeStage(access.allow ?? config.allowlistSourceRange, access.deny ?? config.denylistSourceRange);
    if (s !== null) stages.push(s);
  }
  let secret: ResolvedAccess["secret"] = null;
  if (auth.state === "basic") {
    const secretNs = auth.namespace ?? ns;
    const key = `${secretNs}/${auth.name}`;
    const refuse = (reason: DiagnosticReason, message: string) => {
      problems.push({ reason, message: `${message}; every path of the Ingress answers 503 until it is fixed`, severity: "error" });
      // ingress-nginx denies the location for a Secret it cannot read or may not read too.
      stages.push(refuseStage(message, true));
    };
    if (secretNs !== ns) {
      // ingress-nginx refuses a Secret from another namespace unless allow-cross-namespace-resources
      // (off by default since v1.12): one tenant's Ingress must not read another tenant's users.
      refuse("InvalidAnnotation", `auth-secret ${key} is in another namespace than the Ingress, which is not allowed`);
    } else {
      const object = secrets.get(key);
      secret = { key, object };
      const read = object === undefined ? `Secret ${key} (auth-secret) not found` : readSecret(object, key, auth.secretType);
      if (typeof read === "string") refuse(object === undefined ? "SecretNotFound" : "InvalidAuthSecret", read);
      else {
        for (const p of read.problems) problems.push({ reason: "InvalidAuthSecret", message: `Secret ${key}: ${p}`, severity: "warning" });
        if (read.users.length === 0) problems.push({ reason: "InvalidAuthSecret", message: `Secret ${key} has no user who can log in; every request gets 401`, severity: "warning" });
        stages.push(basicAuthStage(auth.realm, key, read.users));
      }
    }
  }
  let caSecret: ResolvedAccess["caSecret"] = null;
  let hostCert: HostCert | null = null;
  // An invalid client-certificate configuration was refused by parse.ts; that stage is kept above.
  if (certs.state === "on") {
    const secretNs = certs.namespace ?? ns;
    const key = `${secretNs}/${certs.name}`;
    // ingress-nginx: a CA it cannot load (another namespace's Secret, which it refuses unless
    // allow-cross-namespace-resources, a missing Secret) is a "location denied" that also sets
    // the server's AuthTLSError, and the whole host answers 403 (annotations.go Extract,
    // nginx.tmpl `return 403`).
    const unusable = (reason: DiagnosticReason, message: string) => {
      problems.push({ reason, message: `${message}; every path of the host answers ${CA_UNREADABLE_STATUS} until it is fixed`, severity: "error" });
      const stage = stagePolicy(K.CERTIFICATE_REFUSE, { status: CA_UNREADABLE_STATUS, reason: message });
      stages.push(stage);
      hostCert = { stage, error: true };
    };
    if (secretNs !== ns) unusable("InvalidAnnotation", `auth-tls-secret ${key} is in another namespace than the Ingress, which is not allowed`);
    else {
      const object = secrets.get(key);
      caSecret = { key, object };
      const read = object === undefined ? `Secret ${key} (auth-tls-secret) not found` : readCa(object, key);
      if (typeof read === "string") unusable(object === undefined ? "SecretNotFound" : "InvalidAuthSecret", read);
      else {
        const stage = clientCertStage(certs, key, read);
        stages.push(stage);
        hostCert = { stage, error: false };
      }
    }
  }
  const options = Object.freeze({ ...ann.options, stages: assembleStages(stages) });
  const diagnostics = problems.map((p): Diagnostic => ({ kind: "Ingress", namespace: ns, name: ing.metadata.name, ...p }));
  const out: ResolvedAccess = { annotations: Object.freeze({ ...ann, options }), diagnostics, secret, caSecret, hostCert };
  if (cacheable) {
    if (byAnn === undefined) shared.set(config, (byAnn = new WeakMap()));
    byAnn.set(ann, out);
  }
  return out;
}
