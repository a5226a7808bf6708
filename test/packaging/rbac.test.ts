// Keeps RBAC honest: k8s/*.yaml must grant Portico's ServiceAccount exactly the calls declared
// in src/kube/permissions.ts, with the same scope. No call without a grant (the controller
// would fail with 403 in a real cluster), no grant without a call (least privilege).
import { describe, expect, test } from "bun:test";
import { API_PERMISSIONS, type ApiPermission } from "../../src/kube/permissions.ts";
import { type Binding, type Loaded, type Manifest, type Role, K8S_DIR, find, loadDir, ofKind } from "./k8s.ts";

type Scope = ApiPermission["scope"];
interface Grant {
  scope: Scope;
  group: string;
  resource: string;
  verb: string;
  /** null: any name. */
  resourceNames: string[] | null;
  from: string; // "ClusterRole/portico" etc., for messages
}

interface Deployment extends Manifest {
  spec: { template: { spec: { serviceAccountName?: string; containers: { name: string; args?: string[] }[] } } };
}

const key = (scope: Scope, group: string, resource: string, verb: string): string =>
  `${scope} ${group || "core"}/${resource} ${verb}`;

/** Every (scope, group, resource, verb) the manifests grant to the ServiceAccount `ns/sa`. */
function grantsFor(docs: readonly Loaded[], ns: string, sa: string): Grant[] {
  const ours = (b: Binding): boolean =>
    (b.subjects ?? []).some((s) => s.kind === "ServiceAccount" && s.name === sa && s.namespace === ns);
  const out: Grant[] = [];
  const addRules = (role: Role, scope: Scope): void => {
    for (const r of role.rules ?? []) {
      if (r.nonResourceURLs?.length) throw new Error(`${role.kind}/${role.metadata.name}: nonResourceURLs are never needed`);
      for (const group of r.apiGroups ?? [])
        for (const resource of r.resources ?? [])
          for (const verb of r.verbs ?? []) {
            if ([group, resource, verb].includes("*")) throw new Error(`${role.kind}/${role.metadata.name}: wildcard in a rule`);
            const names = r.resourceNames?.length ? [...r.resourceNames] : null;
            out.push({ scope, group, resource, verb, resourceNames: names, from: `${role.kind}/${role.metadata.name}` });
          }
    }
  };
  for (const b of ofKind<Binding>(docs, "ClusterRoleBinding").filter(ours)) {
    if (b.roleRef.kind !== "ClusterRole") throw new Error(`ClusterRoleBinding/${b.metadata.name} must reference a ClusterRole`);
    addRules(find<Role>(docs, "ClusterRole", b.roleRef.name), "cluster");
  }
  for (const b of ofKind<Binding>(docs, "RoleBinding").filter(ours)) {
    // A grant in another namespace is not something permissions.ts can declare.
    if (b.metadata.namespace !== ns) throw new Error(`RoleBinding ${b.metadata.namespace}/${b.metadata.name} is outside ${ns}`);
    const role =
      b.roleRef.kind === "Role"
        ? ofKind<Role>(docs, "Role").find((r) => r.metadata.name === b.roleRef.name && r.metadata.namespace === ns)
        : find<Role>(docs, "ClusterRole", b.roleRef.name);
    if (!role) throw new Error(`RoleBinding ${ns}/${b.metadata.name} references a missing ${b.roleRef.kind}`);
    addRules(role, "namespace");
  }
  return out;
}

// Verbs whose request has no object name at authorization time: resourceNames cannot allow them.
const UNNAMED_VERBS = new Set(["create", "list", "watch", "deletecollection"]);

/** Problems, one line each: declared calls not granted, grants not declared, useless name limits. */
function diffGrants(declared: readonly ApiPermission[], grants: readonly Grant[], leaseName: string): string[] {
  const problems: string[] = [];
  const declaredKeys = new Set<string>();
  for (const p of declared)
    for (const verb of p.verbs) {
      const k = key(p.scope, p.group, p.resource, verb);
      declaredKeys.add(k);
      const g = grants.filter((x) => key(x.scope, x.group, x.resource, x.verb) === k);
      if (g.length === 0) problems.push(`declared but not granted: ${k}`);
      else if (g.every((x) => x.resourceNames !== null && !x.resourceNames.includes(leaseName)))
        problems.push(`granted only for other names than ${leaseName}: ${k}`);
    }
  for (const g of grants) {
    const k = key(g.scope, g.group, g.resource, g.verb);
    if (!declaredKeys.has(k)) problems.push(`granted but not declared: ${k} (${g.from})`);
    if (g.resourceNames !== null && UNNAMED_VERBS.has(g.verb))
      problems.push(`resourceNames cannot restrict ${g.verb}: ${k} (${g.from})`);
  }
  return [...new Set(problems)].sort();
}

const docs = loadDir(K8S_DIR);
const deploy = find<Deployment>(docs, "Deployment", "portico");
const ns = deploy.metadata.namespace ?? "";
const sa = deploy.spec.template.spec.serviceAccountName ?? "";
const container = deploy.spec.template.spec.containers.find((c) => c.name === "portico");
const electionId = (container?.args ?? []).find((a) => a.startsWith("--election-id="))?.slice("--election-id=".length) ?? "";

describe("RBAC in k8s/ matches src/kube/permissions.ts", () => {
  test("the Deployment runs as a ServiceAccount defined in its namespace", () => {
    expect(ns).toBe("portico");
    expect(sa).not.toBe("");
    expect(find(docs, "ServiceAccount", sa).metadata.namespace).toBe(ns);
    expect(electionId).not.toBe("");
  });

  test("every declared call is granted and every grant is declared, with the same scope", () => {
    const grants = grantsFor(docs, ns, sa);
    expect(grants.length).toBeGreaterThan(0);
    expect(diffGrants(API_PERMISSIONS, grants, electionId)).toEqual([]);
  });

  test("both scopes are in use and bound separately", () => {
    const scopes = new Set(grantsFor(docs, ns, sa).map((g) => g.scope));
    expect([...scopes].sort()).toEqual(["cluster", "namespace"]);
  });

  test("nothing else in the manifests is bound to the ServiceAccount through another subject kind", () => {
    // A Group/User subject that happens to match would grant more than permissions.ts says.
    for (const b of [...ofKind<Binding>(docs, "ClusterRoleBinding"), ...ofKind<Binding>(docs, "RoleBinding")])
      for (const s of b.subjects ?? []) expect(s.kind).toBe("ServiceAccount");
  });
});

describe("the RBAC checker itself", () => {
  const grants = grantsFor(docs, ns, sa);

  test("reports a declared call that is not granted", () => {
    const without = grants.filter((g) => !(g.resource === "ingresses/status" && g.verb === "patch"));
    expect(diffGrants(API_PERMISSIONS, without, electionId)).toEqual([
      "declared but not granted: cluster networking.k8s.io/ingresses/status patch",
    ]);
  });

  test("reports a grant that is not declared, and a grant in the wrong scope", () => {
    const extra: Grant = { scope: "cluster", group: "", resource: "pods", verb: "list", resourceNames: null, from: "x" };
    const wrongScope = grants.map((g) => (g.resource === "leases" && g.verb === "create" ? { ...g, scope: "cluster" as const } : g));
    expect(diffGrants(API_PERMISSIONS, [...grants, extra], electionId)).toEqual(["granted but not declared: cluster core/pods list (x)"]);
    expect(diffGrants(API_PERMISSIONS, wrongScope, electionId)).toEqual([
      "declared but not granted: namespace coordination.k8s.io/leases create",
      "granted but not declared: cluster coordination.k8s.io/leases create (Role/portico-leader-election)",
    ]);
  });

  test("reports a Lease name limit that does not match --election-id", () => {
    expect(diffGrants(API_PERMISSIONS, grants, "another-id")).toEqual([
      "granted only for other names than another-id: namespace coordination.k8s.io/leases get",
      "granted only for other names than another-id: namespace coordination.k8s.io/leases update",
    ]);
  });

  test("rejects wildcards", () => {
    const bad: Loaded[] = docs.map((l) =>
      l.doc.kind === "ClusterRole"
        ? { ...l, doc: { ...l.doc, rules: [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }] } as Role }
        : l,
    );
    expect(() => grantsFor(bad, ns, sa)).toThrow("wildcard");
  });
});
